#include "hvd/common/base64.h"

#include <openssl/evp.h>

namespace hvd::common {

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int written =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(written));
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return Status::InvalidArgument("base64 text length " +
                                   std::to_string(text.size()) +
                                   " is not a multiple of 4");
  }
  std::string out(3 * (text.size() / 4), '\0');
  int written =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(text.data()),
                      static_cast<int>(text.size()));
  if (written < 0) return Status::InvalidArgument("malformed base64 text");
  // EVP_DecodeBlock counts padding as zero bytes; drop them.
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++padding;
  out.resize(static_cast<size_t>(written) - padding);
  return out;
}

}  // namespace hvd::common
