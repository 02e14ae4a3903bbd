// RequestParser fed bytes directly: what it keeps, what it refuses.
#include "request_parser.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace hvd::common {
namespace {

namespace http = boost::beast::http;

// Feeds `bytes` the way a read does; returns the first error.
boost::beast::error_code Feed(RequestParser& parser, const std::string& bytes) {
  boost::beast::error_code ec;
  std::string_view rest(bytes);
  while (!rest.empty() && !parser.is_done()) {
    size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    if (ec == http::error::need_more) return {};
    if (ec) return ec;
    if (used == 0) break;
    rest.remove_prefix(used);
    if (parser.is_header_done() && !parser.is_done() &&
        parser.content_length() && *parser.content_length() > 1000) {
      break;  // what the server does: refuse before the body
    }
  }
  return ec;
}

TEST(RequestParserTest, KeepsMethodTargetSignatureAndBody) {
  RequestParser parser(16 * 1024, 64);
  parser.AllowBody(100);
  auto ec = Feed(parser,
                 "PUT /v1/kv/s/k?x=1 HTTP/1.1\r\nHost: h\r\n"
                 "x-hvd-timestamp: 17\r\nX-Hvd-Nonce: n\r\n"
                 "X-HVD-CONTENT-SHA256: d\r\nX-Hvd-Signature: s\r\n"
                 "Content-Length: 5\r\n\r\nhello");
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_done());
  EXPECT_EQ(parser.method(), "PUT");
  EXPECT_EQ(parser.target(), "/v1/kv/s/k?x=1");
  EXPECT_EQ(parser.version(), 11);
  EXPECT_EQ(parser.signature().timestamp, "17");
  EXPECT_EQ(parser.signature().nonce, "n");
  EXPECT_EQ(parser.signature().content_sha256, "d");
  EXPECT_EQ(parser.signature().signature, "s");
  EXPECT_EQ(parser.body(), "hello");
}

TEST(RequestParserTest, AHugeContentLengthPassesTheHeaderWithoutAllocating) {
  RequestParser parser(16 * 1024, 64);
  auto ec = Feed(parser,
                 "PUT / HTTP/1.1\r\nContent-Length: 1099511627776"
                 "\r\n\r\n");
  EXPECT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_header_done());
  EXPECT_EQ(*parser.content_length(), 1099511627776u);
  EXPECT_LT(parser.body().capacity(), 1024u);
}

TEST(RequestParserTest, TooManyFieldsAreAHeaderLimit) {
  RequestParser parser(16 * 1024, 8);
  std::string request = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 9; ++i) request += "A" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Feed(parser, request + "\r\n"), http::error::header_limit);
}

TEST(RequestParserTest, TooManyBytesAreAHeaderLimit) {
  RequestParser parser(1024, 64);
  EXPECT_EQ(Feed(parser,
                 "GET / HTTP/1.1\r\nA: " + std::string(2000, 'x') + "\r\n\r\n"),
            http::error::header_limit);
}

TEST(RequestParserTest, RepeatedOrOversizedSignatureFieldsAreMalformed) {
  RequestParser twice(16 * 1024, 64);
  EXPECT_EQ(Feed(twice,
                 "GET / HTTP/1.1\r\nX-Hvd-Nonce: a\r\n"
                 "x-hvd-nonce: b\r\n\r\n"),
            http::error::bad_value);
  RequestParser oversized(16 * 1024, 64);
  EXPECT_EQ(Feed(oversized, "GET / HTTP/1.1\r\nX-Hvd-Signature: " +
                                std::string(200, 'a') + "\r\n\r\n"),
            http::error::bad_value);
}

TEST(RequestParserTest, ABodyOverTheAllowedLimitIsRefused) {
  RequestParser parser(16 * 1024, 64);
  parser.AllowBody(4);
  EXPECT_EQ(Feed(parser,
                 "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "10\r\n0123456789abcdef\r\n0\r\n\r\n"),
            http::error::body_limit);
}

}  // namespace
}  // namespace hvd::common
