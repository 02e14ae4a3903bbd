// RequestParser: Beast's HTTP/1.1 request parser, keeping only what a
// signed hvd request needs: method, target, the four X-Hvd-* signature
// fields, the signer's X-Hvd-Worker (worker_key.h) and the body. Every other
// header field is counted and dropped, so memory per connection is bounded by
// the header byte limit whatever a client sends, and the number of fields is
// bounded too (Beast bounds only their total size). One parser reads one
// request.
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "hvd/common/hmac.h"

namespace hvd::common {

class RequestParser : public boost::beast::http::basic_parser<true> {
 public:
  RequestParser(uint32_t header_bytes, size_t header_fields);

  const std::string& method() const { return method_; }
  const std::string& target() const { return target_; }
  int version() const { return version_; }
  // Views into this parser; valid while it lives.
  ReceivedSignature signature() const;
  // The X-Hvd-Worker field, or "" (signed with the job secret).
  const std::string& worker() const { return worker_; }
  // The token of an `Authorization: Bearer <token>` field, or "".
  const std::string& bearer() const { return bearer_; }
  std::string& body() { return body_; }

  // Called once the header passed the signature check: the body may now be
  // read, up to `limit` bytes (Beast refuses more with error::body_limit).
  void AllowBody(uint64_t limit);

 private:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  void on_request_impl(boost::beast::http::verb method, string_view method_str,
                       string_view target, int version,
                       error_code& ec) override;
  void on_response_impl(int code, string_view reason, int version,
                        error_code& ec) override;
  void on_field_impl(boost::beast::http::field name, string_view name_string,
                     string_view value, error_code& ec) override;
  void on_header_impl(error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code& ec) override;
  std::size_t on_body_impl(string_view body, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, string_view extensions,
                            error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body,
                                 error_code& ec) override;
  void on_finish_impl(error_code& ec) override;

  const size_t max_fields_;
  uint64_t body_allowed_ = 0;
  size_t fields_ = 0;
  std::string method_;
  std::string target_;
  int version_ = 11;
  std::string timestamp_;
  std::string nonce_;
  std::string content_sha256_;
  std::string signature_;
  std::string worker_;
  std::string bearer_;
  std::string body_;
};

}  // namespace hvd::common
