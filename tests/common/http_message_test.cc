// The pure parts of the servers' request handling: targets, escapes, error
// answers.
#include "hvd/common/http_message.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hvd::common {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

TEST(ParseTargetTest, SplitsAndDecodesPathAndQuery) {
  auto parsed = ParseTarget("/v1/kv/a%2Fb?keys=x,y&wait_ms=5&name=a+b%2B&e&=v");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->path, "/v1/kv/a/b");
  EXPECT_EQ(parsed->params, (Params{{"keys", "x,y"},
                                    {"wait_ms", "5"},
                                    {"name", "a b+"},
                                    {"e", ""},
                                    {"", "v"}}));
  // '+' is a space only in the query.
  EXPECT_EQ(ParseTarget("/a+b")->path, "/a+b");
  EXPECT_TRUE(ParseTarget("/x?")->params.empty());
  EXPECT_TRUE(ParseTarget("/x?&&")->params.empty());
}

TEST(ParseTargetTest, RefusesBrokenEscapesAndTargetsWithoutSlash) {
  for (const char* bad : {"/a%", "/a%2", "/a%zz", "/x?k=%g1", "/x?%=1", "",
                          "x/y", "*", "http://host/x"}) {
    auto parsed = ParseTarget(bad);
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(ParseTargetTest, DecodesBytesThatAreNotUtf8AsTheyAre) {
  auto parsed = ParseTarget("/k%FF%00?v=%C0%80");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->path, std::string("/k\xff\0", 4));
  EXPECT_EQ(parsed->params[0].second, "\xc0\x80");
}

TEST(HttpAnswerTest, ErrorsHaveTheJsonShapeEvenForBytesThatAreNotUtf8) {
  HttpAnswer answer = HttpAnswer::Error(
      Status::InvalidArgument("malformed key '\xff\xfe' \"quoted\""));
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.content_type, "application/json");
  auto json = nlohmann::json::parse(answer.body);  // throws if not JSON
  EXPECT_EQ(json["error"], "invalid_argument");
  EXPECT_NE(json["message"].get<std::string>().find("\"quoted\""),
            std::string::npos);
  EXPECT_EQ(HttpAnswer::Error(Status::Unauthenticated("x")).status, 401);
  EXPECT_EQ(HttpAnswer::Error(Status::NotFound("x")).status, 404);
  EXPECT_EQ(HttpAnswer::Error(Status::Timeout("x")).status, 408);
  EXPECT_EQ(HttpAnswer::Error(Status::ResourceExhausted("x")).status, 413);
  EXPECT_EQ(HttpAnswer::Error(Status::Aborted("x")).status, 503);
  EXPECT_EQ(HttpAnswer::Error(Status::Internal("x")).status, 500);
  EXPECT_EQ(HttpAnswer::Error(431, Status::ResourceExhausted("x")).status, 431);
}

TEST(PrintableTest, EscapesWhatIsNotPrintableAsciiAndTruncates) {
  EXPECT_EQ(Printable("plain text"), "plain text");
  EXPECT_EQ(Printable(std::string("a\nb\xff\0\\", 6)),
            "a\\x0ab\\xff\\x00\\x5c");
  EXPECT_EQ(Printable(std::string(300, 'x'), 10), "xxxxxxxxxx...");
}

TEST(HttpRequestTest, ParamsAreLookedUpByName) {
  HttpRequest req;
  req.params = {{"a", "1"}, {"b", ""}, {"a", "2"}};
  EXPECT_TRUE(req.HasParam("a"));
  EXPECT_TRUE(req.HasParam("b"));
  EXPECT_FALSE(req.HasParam("c"));
  EXPECT_EQ(req.Param("a"), "1");
  EXPECT_EQ(req.Param("c"), "");
}

}  // namespace
}  // namespace hvd::common
