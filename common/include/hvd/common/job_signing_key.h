// The job's signing key (issue 33): an Ed25519 key pair derived from the
// job secret, the same in every hvdrun of a job (a leader and its
// standbys share the secret file), so none of them has to hand a key to
// another. hvdrun signs what it writes to etcd with it; workers get only
// the public half (HVD_JOB_PUBLIC_KEY), with which they can check what
// hvdrun wrote (the leading hvdrun's address) but never write as hvdrun.
//
//   private seed = HMAC-SHA256(job secret, "hvd job signing key") (32 bytes)
//   public key   = its Ed25519 public key, 64 lower-case hex digits
//   signature    = Ed25519 over the message, 128 lower-case hex digits
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hvd/common/status.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace hvd::common {

inline constexpr size_t kJobPublicKeyDigits = 64;
inline constexpr size_t kJobSignatureDigits = 128;

class JobSigningKey {
 public:
  // kInternal only when OpenSSL fails (no Ed25519 in its providers).
  static Result<JobSigningKey> FromSecret(std::string_view job_secret);

  const std::string& public_key() const { return public_key_; }
  // The signature of `message`; "" only if OpenSSL fails, which no
  // signature check accepts.
  std::string Sign(std::string_view message) const;

 private:
  std::shared_ptr<evp_pkey_st> key_;
  std::string public_key_;
};

// Whether `signature` is the job's signature of `message`, under the
// public key `public_key` (both hex as above). kUnauthenticated when not,
// or when either is malformed.
Status VerifyJobSignature(std::string_view public_key, std::string_view message,
                          std::string_view signature);

}  // namespace hvd::common
