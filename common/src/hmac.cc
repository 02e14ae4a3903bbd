#include "hvd/common/hmac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <memory>

namespace hvd::common {
std::string LowerHex(const unsigned char* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    hex[2 * i] = kDigits[data[i] >> 4];
    hex[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return hex;
}

namespace {

// Fetching the algorithm is the slow part of an OpenSSL 3 MAC; do it once.
EVP_MAC* HmacAlgorithm() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

struct MacCtxDeleter {
  void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};

}  // namespace

Result<std::string> NewJobSecret() {
  std::array<unsigned char, 32> bytes;
  if (RAND_bytes(bytes.data(), bytes.size()) != 1) {
    return Status::Internal("OpenSSL RAND_bytes could not make a job secret");
  }
  return LowerHex(bytes.data(), bytes.size());
}

namespace {

std::string HmacParts(std::string_view key,
                      std::initializer_list<std::string_view> parts) {
  std::unique_ptr<EVP_MAC_CTX, MacCtxDeleter> ctx(
      EVP_MAC_CTX_new(HmacAlgorithm()));
  char digest_name[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  // HMAC with an empty key is valid; OpenSSL wants a non-null pointer.
  static const unsigned char kEmpty = 0;
  const auto* key_bytes =
      key.empty() ? &kEmpty
                  : reinterpret_cast<const unsigned char*>(key.data());
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t out_len = 0;
  bool ok = ctx && EVP_MAC_init(ctx.get(), key_bytes, key.size(), params) == 1;
  for (std::string_view part : parts) {
    ok = ok &&
         EVP_MAC_update(ctx.get(),
                        reinterpret_cast<const unsigned char*>(part.data()),
                        part.size()) == 1;
  }
  ok = ok && EVP_MAC_final(ctx.get(), out, &out_len, sizeof(out)) == 1;
  // Only an OpenSSL without SHA-256 fails here; an empty signature then
  // matches nothing, so requests are refused rather than accepted.
  return ok ? LowerHex(out, out_len) : std::string();
}

}  // namespace

std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  return HmacParts(key, {message});
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

namespace {

bool IsLowerHex(std::string_view text, size_t digits) {
  if (text.size() != digits) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Milliseconds since the epoch: 1 to 15 decimal digits (until year 33658),
// nothing else, so no sign, space or overflow can slip through.
bool ParseTimestamp(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 15) return false;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

}  // namespace

Result<std::string> NewNonce() {
  std::array<unsigned char, kNonceHexDigits / 2> bytes;
  if (RAND_bytes(bytes.data(), bytes.size()) != 1) {
    return Status::Internal("OpenSSL RAND_bytes could not make a nonce");
  }
  return LowerHex(bytes.data(), bytes.size());
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(),
                 nullptr) != 1) {
    // As for the HMAC: an empty digest matches nothing.
    return std::string();
  }
  return LowerHex(digest, size);
}

std::string SignRequest(std::string_view secret, std::string_view method,
                        std::string_view target, int64_t timestamp_ms,
                        std::string_view nonce,
                        std::string_view content_sha256) {
  std::string ts = std::to_string(timestamp_ms);
  return HmacParts(secret, {method, "\n", target, "\n", ts, "\n", nonce, "\n",
                            content_sha256});
}

std::vector<std::pair<std::string, std::string>> SignatureHeaders::Fields()
    const {
  return {{kTimestampHeader, timestamp},
          {kNonceHeader, nonce},
          {kContentSha256Header, content_sha256},
          {kSignatureHeader, signature}};
}

Result<SignatureHeaders> SignNewRequest(std::string_view secret,
                                        std::string_view method,
                                        std::string_view target,
                                        std::string_view body, int64_t now_ms) {
  auto nonce = NewNonce();
  if (!nonce.ok()) return nonce.status();
  SignatureHeaders headers;
  headers.timestamp = std::to_string(now_ms);
  headers.nonce = std::move(*nonce);
  headers.content_sha256 = Sha256Hex(body);
  headers.signature = SignRequest(secret, method, target, now_ms, headers.nonce,
                                  headers.content_sha256);
  return headers;
}

Result<int64_t> VerifyRequestHeaders(std::string_view secret,
                                     std::string_view method,
                                     std::string_view target,
                                     const ReceivedSignature& received,
                                     int64_t now_ms,
                                     std::chrono::milliseconds window) {
  if (received.timestamp.empty() || received.nonce.empty() ||
      received.content_sha256.empty() || received.signature.empty()) {
    return Status::Unauthenticated(
        std::string("request is not signed (needs the ") + kTimestampHeader +
        ", " + kNonceHeader + ", " + kContentSha256Header + " and " +
        kSignatureHeader + " headers)");
  }
  int64_t ts = 0;
  if (!ParseTimestamp(received.timestamp, &ts)) {
    return Status::Unauthenticated(std::string(kTimestampHeader) +
                                   " is not decimal milliseconds");
  }
  if (!IsLowerHex(received.nonce, kNonceHexDigits)) {
    return Status::Unauthenticated(std::string(kNonceHeader) + " is not " +
                                   std::to_string(kNonceHexDigits) +
                                   " lower-case hex digits");
  }
  if (!IsLowerHex(received.content_sha256, 64)) {
    return Status::Unauthenticated(std::string(kContentSha256Header) +
                                   " is not 64 lower-case hex digits");
  }
  int64_t age = now_ms - ts;
  if (age > window.count() || -age > window.count()) {
    return Status::Unauthenticated(
        "request timestamp is " + std::to_string(age) +
        " ms away from this server's clock; the window is " +
        std::to_string(window.count()) +
        " ms (stale or replayed request, or clocks out of sync)");
  }
  std::string expected = SignRequest(secret, method, target, ts, received.nonce,
                                     received.content_sha256);
  if (expected.empty() || !ConstantTimeEquals(expected, received.signature)) {
    return Status::Unauthenticated(
        "bad request signature (not signed with this job's key: is it "
        "another job's worker, or another worker's?)");
  }
  return ts;
}

Status VerifyBody(std::string_view content_sha256, std::string_view body) {
  std::string actual = Sha256Hex(body);
  if (actual.empty() || !ConstantTimeEquals(actual, content_sha256)) {
    return Status::Unauthenticated(
        "the body does not match its signed digest (" +
        std::string(kContentSha256Header) + ")");
  }
  return Status::Ok();
}

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace hvd::common
