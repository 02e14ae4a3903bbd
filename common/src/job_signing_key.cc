#include "hvd/common/job_signing_key.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <optional>

#include "hvd/common/hmac.h"

namespace hvd::common {

namespace {

constexpr size_t kSeedBytes = 32;
constexpr size_t kPublicBytes = 32;
constexpr size_t kSignatureBytes = 64;

// 2N lower-case hex digits as N bytes; nullopt for anything else.
template <size_t N>
std::optional<std::array<unsigned char, N>> FromHex(std::string_view text) {
  if (text.size() != 2 * N) return std::nullopt;
  std::array<unsigned char, N> out{};
  for (size_t i = 0; i < 2 * N; ++i) {
    const char c = text[i];
    int value = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
    if (value < 0) return std::nullopt;
    out[i / 2] = static_cast<unsigned char>(out[i / 2] << 4 | value);
  }
  return out;
}

struct FreeKey {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct FreeContext {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};
using Context = std::unique_ptr<EVP_MD_CTX, FreeContext>;

}  // namespace

Result<JobSigningKey> JobSigningKey::FromSecret(std::string_view job_secret) {
  static constexpr char kLabel[] = "hvd job signing key";
  unsigned char seed[kSeedBytes];
  unsigned int seed_size = 0;
  if (HMAC(EVP_sha256(), job_secret.data(), static_cast<int>(job_secret.size()),
           reinterpret_cast<const unsigned char*>(kLabel), sizeof(kLabel) - 1,
           seed, &seed_size) == nullptr ||
      seed_size != kSeedBytes) {
    return Status::Internal("OpenSSL could not derive the job's signing key");
  }
  std::shared_ptr<EVP_PKEY> key(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed, kSeedBytes),
      FreeKey());
  unsigned char public_bytes[kPublicBytes];
  size_t public_size = kPublicBytes;
  if (!key ||
      EVP_PKEY_get_raw_public_key(key.get(), public_bytes, &public_size) != 1 ||
      public_size != kPublicBytes) {
    return Status::Internal(
        "OpenSSL could not make the job's Ed25519 signing key");
  }
  JobSigningKey made;
  made.key_ = std::move(key);
  made.public_key_ = LowerHex(public_bytes, kPublicBytes);
  return made;
}

std::string JobSigningKey::Sign(std::string_view message) const {
  Context context(EVP_MD_CTX_new());
  unsigned char signature[kSignatureBytes];
  size_t size = kSignatureBytes;
  if (!context ||
      EVP_DigestSignInit(context.get(), nullptr, nullptr, nullptr,
                         key_.get()) != 1 ||
      EVP_DigestSign(context.get(), signature, &size,
                     reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1 ||
      size != kSignatureBytes) {
    return "";
  }
  return LowerHex(signature, kSignatureBytes);
}

Status VerifyJobSignature(std::string_view public_key, std::string_view message,
                          std::string_view signature) {
  const auto public_bytes = FromHex<kPublicBytes>(public_key);
  const auto signature_bytes = FromHex<kSignatureBytes>(signature);
  if (!public_bytes || !signature_bytes) {
    return Status::Unauthenticated(
        "a job signature or public key that is not hex of the right length");
  }
  std::unique_ptr<EVP_PKEY, FreeKey> key(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, public_bytes->data(), kPublicBytes));
  Context context(EVP_MD_CTX_new());
  if (!key || !context ||
      EVP_DigestVerifyInit(context.get(), nullptr, nullptr, nullptr,
                           key.get()) != 1) {
    return Status::Unauthenticated(
        "OpenSSL could not check an Ed25519 signature");
  }
  if (EVP_DigestVerify(context.get(), signature_bytes->data(), kSignatureBytes,
                       reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1) {
    return Status::Unauthenticated("not signed with this job's key");
  }
  return Status::Ok();
}

}  // namespace hvd::common
