// Fuzzes what a control-plane server does with the raw bytes of a request
// before and after the signature check: the HTTP parser (RequestParser over
// Beast) with the server's header limits, the target's percent-decoding
// (ParseTarget), and the rendezvous routes (key-value and check-in) on the
// parsed request, as if it had been signed.
// Input: the bytes of one HTTP request, as a client sends them.
// Properties: nothing throws or crashes; the parser never keeps more than
// its limits allow; a route never answers 500 (malformed input is 400) and
// every error answer is the JSON shape of docs/protocol.md.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "http_reply.h"
#include "hvd/common/http_message.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/kv_store.h"
#include "hvd/rendezvous/protocol.h"
#include "request_parser.h"

namespace {

namespace http = boost::beast::http;
using hvd::common::HttpAnswer;
using hvd::common::HttpRequest;
using hvd::common::RequestParser;

// Small limits, so that the fuzzer reaches them.
constexpr uint32_t kHeaderBytes = 2048;
constexpr size_t kHeaderFields = 16;
constexpr uint64_t kBodyBytes = 4096;
// Longer than any valid signature field; RequestParser refuses longer ones.
constexpr size_t kMaxSignatureField = 128;

// Feeds `bytes` as reads would, the body only once the header passed (as
// the server does after the signature check). The whole input is all the
// client sends: when the parser can make no progress with what is left, the
// stream ends there. True when a whole request was parsed.
bool Parse(RequestParser& parser, std::string_view bytes) {
  boost::beast::error_code ec;
  bool body_allowed = false;
  while (!parser.is_done()) {
    if (parser.is_header_done() && !body_allowed) {
      auto length = parser.content_length();
      if (length && *length > kBodyBytes) return false;  // 413, unread
      parser.AllowBody(kBodyBytes);
      body_allowed = true;
    }
    size_t used = 0;
    if (!bytes.empty()) {
      used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (ec == http::error::need_more) ec = {};
      if (ec) return false;
    }
    if (used == 0) {
      // Nothing more to parse: the client closed here. Beast ends a body
      // that runs to the end of the stream; anything else is truncated.
      // (put_eof is only for a parser that got some bytes.)
      if (!parser.got_some()) return false;
      parser.put_eof(ec);
      return !ec && parser.is_done();
    }
  }
  return true;
}

void CheckAnswer(const HttpAnswer& answer) {
  HVD_FUZZ_CHECK(answer.status != 500);
  HVD_FUZZ_CHECK(answer.status >= 200 && answer.status < 600);
  if (answer.status < 400) return;
  auto body = nlohmann::json::parse(answer.body, nullptr, false);
  HVD_FUZZ_CHECK(body.is_object());
  HVD_FUZZ_CHECK(body.contains(hvd::rendezvous::protocol::kError));
  HVD_FUZZ_CHECK(body.contains(hvd::rendezvous::protocol::kMessage));
}

void Route(HttpRequest request) {
  // A fresh store and board per input: no state carries between inputs.
  // A zero maximum wait refuses every wait_ms > 0, so nothing blocks.
  hvd::rendezvous::KvStore store{hvd::rendezvous::KvLimits{}};
  hvd::rendezvous::ElasticBoard board;
  const std::chrono::milliseconds no_wait{0};
  const std::string kv = hvd::rendezvous::protocol::kKvPath;
  if (request.path.compare(0, kv.size(), kv) == 0) {
    CheckAnswer(hvd::rendezvous::internal::HandleKv(request, store, no_wait));
  }
  // Any path: the check-in's query parsing sees every request's params.
  CheckAnswer(
      hvd::rendezvous::internal::HandleCheckIn(request, board, no_wait));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  RequestParser parser(kHeaderBytes, kHeaderFields);
  const bool whole = Parse(parser, bytes);
  const auto signature = parser.signature();
  for (std::string_view field :
       {signature.timestamp, signature.nonce, signature.content_sha256,
        signature.signature}) {
    HVD_FUZZ_CHECK(field.size() <= kMaxSignatureField);
  }
  HVD_FUZZ_CHECK(parser.body().size() <= kBodyBytes);
  if (!whole) return 0;

  auto target = hvd::common::ParseTarget(parser.target());
  if (!target.ok()) {
    // Answered as the server does: 400 with the JSON body.
    CheckAnswer(HttpAnswer::Error(target.status()));
    return 0;
  }
  HttpRequest request;
  request.method = parser.method();
  request.target = parser.target();
  request.path = std::move(target->path);
  request.params = std::move(target->params);
  request.body = std::move(parser.body());
  request.peer = "127.0.0.1:1";
  Route(std::move(request));
  return 0;
}
