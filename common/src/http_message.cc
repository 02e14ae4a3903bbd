#include "hvd/common/http_message.h"

#include <nlohmann/json.hpp>

namespace hvd::common {

bool HttpRequest::HasParam(std::string_view name) const {
  for (const auto& [key, value] : params) {
    if (key == name) return true;
  }
  return false;
}

std::string HttpRequest::Param(std::string_view name) const {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return std::string();
}

int HttpStatusFor(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return 400;
    case Code::kUnauthenticated:
      return 401;
    case Code::kPermissionDenied:
      return 403;
    case Code::kNotFound:
      return 404;
    case Code::kTimeout:
      return 408;
    case Code::kResourceExhausted:
      return 413;
    case Code::kAborted:
      return 503;
    default:
      return 500;
  }
}

HttpAnswer HttpAnswer::Error(const Status& status) {
  return Error(HttpStatusFor(status.code()), status);
}

HttpAnswer HttpAnswer::Error(int http_status, const Status& status) {
  nlohmann::json body{{"error", CodeName(status.code())},
                      {"message", status.message()}};
  HttpAnswer answer;
  answer.status = http_status;
  answer.content_type = "application/json";
  // A message may quote a client's bytes (a malformed key); replacing what
  // is not UTF-8 keeps dump() from throwing, which used to turn a 400 into
  // a 500.
  answer.body =
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return answer;
}

HttpAnswer HttpAnswer::Json(std::string body) {
  HttpAnswer answer;
  answer.content_type = "application/json";
  answer.body = std::move(body);
  return answer;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      bool complete = i + 2 < text.size();
      int high = complete ? HexValue(text[i + 1]) : -1;
      int low = complete ? HexValue(text[i + 2]) : -1;
      if (high < 0 || low < 0) {
        return Status::InvalidArgument(
            "malformed percent escape in '" + Printable(text) +
            "' ('%' must be followed by two hex digits)");
      }
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Result<ParsedTarget> ParseTarget(std::string_view target) {
  if (target.empty() || target[0] != '/') {
    return Status::InvalidArgument("request target '" + Printable(target) +
                                   "' does not start with '/'");
  }
  size_t question = target.find('?');
  ParsedTarget parsed;
  auto path = PercentDecode(target.substr(0, question), false);
  if (!path.ok()) return path.status();
  parsed.path = std::move(*path);
  if (question == std::string_view::npos) return parsed;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view()
                                          : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t equals = pair.find('=');
    auto name = PercentDecode(pair.substr(0, equals), true);
    if (!name.ok()) return name.status();
    std::string value;
    if (equals != std::string_view::npos) {
      auto decoded = PercentDecode(pair.substr(equals + 1), true);
      if (!decoded.ok()) return decoded.status();
      value = std::move(*decoded);
    }
    parsed.params.emplace_back(std::move(*name), std::move(value));
  }
  return parsed;
}

std::string Printable(std::string_view text, size_t max_bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == max_bytes) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 0xf]);
    }
  }
  return out;
}

}  // namespace hvd::common
