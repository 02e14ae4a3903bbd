// The request and answer types of hvd's HTTP servers (SignedHttpServer), and
// the pure functions that turn raw request bytes into them. Handlers see only
// these types, never the HTTP library, so route logic is plain functions of
// a request that tests and fuzz targets can call directly.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/common/worker_key.h"

namespace hvd::common {

// A complete, authenticated request as a handler sees it.
struct HttpRequest {
  std::string method;  // as sent, e.g. "GET"
  std::string target;  // as sent on the request line (path + query)
  std::string path;    // the target's path, percent-decoded
  // The query's name=value pairs in order, percent-decoded ('+' is a space).
  std::vector<std::pair<std::string, std::string>> params;
  std::string body;
  std::string peer;  // "<address>:<port>" of the client, for messages
  // Who signed it: the worker whose own key did (worker_key.h), or none
  // when the job secret did (an hvdrun).
  std::optional<WorkerIdentity> worker;

  bool HasParam(std::string_view name) const;
  // The first value of `name`, or "" when absent.
  std::string Param(std::string_view name) const;
};

// What a handler answers. Content-Length and Connection are the server's.
struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  // Further header fields (name, value), e.g. a page's security policy.
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body instead of `body`: one buffer that many answers
  // write from (a prefix wait's, which every waiter of a round gets).
  std::shared_ptr<const std::string> shared_body;

  // The JSON error shape of docs/protocol.md with HttpStatusFor(code):
  // {"error": "<code name>", "message": "..."}. Bytes of `message` that are
  // not UTF-8 are replaced, so this never throws.
  static HttpAnswer Error(const Status& status);
  static HttpAnswer Error(int http_status, const Status& status);
  static HttpAnswer Json(std::string body);
};

// 400 invalid argument, 401 unauthenticated, 404 not found, 408 timeout,
// 413 limit exceeded, 503 aborted (shutting down), 500 anything else.
int HttpStatusFor(Code code);

// Splits a request target into its percent-decoded path and query
// parameters. kInvalidArgument for a target that does not start with '/',
// or a malformed percent escape.
struct ParsedTarget {
  std::string path;
  std::vector<std::pair<std::string, std::string>> params;
};
Result<ParsedTarget> ParseTarget(std::string_view target);

// Decodes %XX escapes (and '+' as a space when `plus_is_space`); nullopt-like
// error for a '%' not followed by two hex digits.
Result<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// `text` safe for a log line or message: bytes outside printable ASCII
// become \xNN, and anything past `max_bytes` becomes "...".
std::string Printable(std::string_view text, size_t max_bytes = 200);

}  // namespace hvd::common
