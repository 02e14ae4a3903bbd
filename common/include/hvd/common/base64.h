// Standard base64 (RFC 4648, with padding) through OpenSSL, for binary
// values carried inside JSON bodies.
#pragma once

#include <string>
#include <string_view>

#include "hvd/common/status.h"

namespace hvd::common {

std::string Base64Encode(std::string_view bytes);

// kInvalidArgument when `text` is not padded standard base64.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace hvd::common
