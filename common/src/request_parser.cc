#include "request_parser.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <limits>

#include "hvd/common/worker_key.h"

namespace hvd::common {

namespace http = boost::beast::http;

namespace {

// Longer than any valid signature field (64 hex digits); a longer value is
// malformed, and refusing it keeps those copies small.
constexpr size_t kMaxSignatureFieldBytes = 128;

std::string_view View(boost::beast::string_view s) {
  return std::string_view(s.data(), s.size());
}

}  // namespace

RequestParser::RequestParser(uint32_t header_bytes, size_t header_fields)
    : max_fields_(header_fields) {
  header_limit(header_bytes);
  // The body limit is set by the server after the signature check: Beast
  // would otherwise refuse a large Content-Length (413) before anyone knows
  // whether the sender holds the secret (401 must come first). Not
  // boost::none: Beast 1.74 compares Content-Length > none, which is true.
  body_limit(std::numeric_limits<std::uint64_t>::max());
  eager(false);
}

void RequestParser::AllowBody(uint64_t limit) {
  body_allowed_ = limit;
  body_limit(limit);
}

ReceivedSignature RequestParser::signature() const {
  return ReceivedSignature{timestamp_, nonce_, content_sha256_, signature_};
}

void RequestParser::on_request_impl(http::verb, string_view method_str,
                                    string_view target, int version,
                                    error_code&) {
  method_.assign(method_str.data(), method_str.size());
  target_.assign(target.data(), target.size());
  version_ = version;
}

void RequestParser::on_response_impl(int, string_view, int, error_code& ec) {
  ec = http::error::bad_version;  // never called for a request parser
}

void RequestParser::on_field_impl(http::field, string_view name_string,
                                  string_view value, error_code& ec) {
  if (++fields_ > max_fields_) {
    ec = http::error::header_limit;
    return;
  }
  std::string* slot = nullptr;
  size_t max_bytes = kMaxSignatureFieldBytes;
  if (boost::beast::iequals(name_string, kTimestampHeader)) {
    slot = &timestamp_;
  } else if (boost::beast::iequals(name_string, kNonceHeader)) {
    slot = &nonce_;
  } else if (boost::beast::iequals(name_string, kContentSha256Header)) {
    slot = &content_sha256_;
  } else if (boost::beast::iequals(name_string, kSignatureHeader)) {
    slot = &signature_;
  } else if (boost::beast::iequals(name_string, kWorkerHeader)) {
    slot = &worker_;
    max_bytes = kMaxWorkerHeaderBytes;
  } else if (boost::beast::iequals(name_string, "Authorization")) {
    const string_view kBearer("Bearer ");
    if (value.size() <= kBearer.size() ||
        !boost::beast::iequals(value.substr(0, kBearer.size()), kBearer)) {
      return;  // another scheme: not ours, ignored
    }
    value = value.substr(kBearer.size());
    slot = &bearer_;
  }
  if (slot == nullptr) return;
  // A repeated or oversized signature field is malformed, never merged.
  if (!slot->empty() || value.empty() || value.size() > max_bytes) {
    ec = http::error::bad_value;
    return;
  }
  slot->assign(View(value));
}

void RequestParser::on_header_impl(error_code&) {}

void RequestParser::on_body_init_impl(
    const boost::optional<std::uint64_t>& content_length, error_code&) {
  // The server checked Content-Length against its limit before it let the
  // body be read; the cap only guards a server that forgot to.
  if (content_length) {
    body_.reserve(
        static_cast<size_t>(std::min(*content_length, body_allowed_)));
  }
}

std::size_t RequestParser::on_body_impl(string_view body, error_code&) {
  body_.append(body.data(), body.size());
  return body.size();
}

void RequestParser::on_chunk_header_impl(std::uint64_t, string_view,
                                         error_code&) {}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view body,
                                              error_code&) {
  body_.append(body.data(), body.size());
  return body.size();
}

void RequestParser::on_finish_impl(error_code&) {}

}  // namespace hvd::common
