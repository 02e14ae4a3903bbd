// A standby's status server: the leader's published page (its record, the
// loopback rule), the redirect decision, a standby's own answers, the
// derived read token, and `hvdrun status`'s redirect rules. Pure, but for
// the last tests, which run one real StatusServer on loopback through its
// two phases (standing by, then leading).
#include "status/standby_status.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "status/status_command.h"
#include "status/status_server.h"

namespace hvd::launcher {
namespace {

using nlohmann::json;

constexpr int64_t kNow = 1'800'000'000'000;
const std::string kLeaderId =
    R"({"host":"n1","pid":42,"started_ms":1799999000000})";

LeaderPage UrlPage() {
  LeaderPage page;
  page.kind = LeaderPage::Kind::kUrl;
  page.url = "http://n1:9100";
  page.host = "n1";
  page.leader = kLeaderId;
  page.since_ms = kNow - 30'000;
  return page;
}

StandbyView View() {
  StandbyView view;
  view.job_id = "resnet-7";
  view.etcd = "e1:2379";
  view.this_hvdrun = "hvdrun pid 7 on n2, started 2027-01-15 08:00:00 UTC";
  view.pid = 7;
  view.host = "n2";
  view.since_ms = kNow - 10'000;
  view.leader = "hvdrun pid 42 on n1, started 2027-01-15 07:59:00 UTC";
  view.leader_since_ms = kNow - 30'000;
  view.page = UrlPage();
  return view;
}

TEST(LeaderPageTest, ItsRecordReadsBackAsWritten) {
  for (auto kind : {LeaderPage::Kind::kUrl, LeaderPage::Kind::kLoopbackOnly,
                    LeaderPage::Kind::kOff}) {
    LeaderPage page = UrlPage();
    page.kind = kind;
    auto parsed = ParseLeaderPage(EncodeLeaderPage(page));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->kind, kind);
    EXPECT_EQ(parsed->url, page.url);
    EXPECT_EQ(parsed->host, "n1");
    EXPECT_EQ(parsed->leader, kLeaderId);
    EXPECT_EQ(parsed->since_ms, page.since_ms);
  }
}

// The machine's name and URL are outside text: a name that is not UTF-8
// is replaced, not thrown (the etcd thread encodes it).
TEST(LeaderPageTest, AMachineNameThatIsNotUtf8IsReplaced) {
  LeaderPage page = UrlPage();
  page.host = "n\xff";
  std::string text;
  ASSERT_NO_THROW(text = EncodeLeaderPage(page));
  auto parsed = ParseLeaderPage(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->host, "n\xef\xbf\xbd");
}

TEST(LeaderPageTest, AnythingElseIsRefusedSayingWhy) {
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "no JSON object"},
      {R"({"kind":"ftp","url":"","host":"","leader":"","since_ms":0})",
       "no kind"},
      {R"({"kind":"url","host":"n1","leader":"x","since_ms":0})",
       "no string 'url'"},
      {R"({"kind":"url","url":"http://n1:1","host":"n1","since_ms":0})",
       "no string 'leader'"},
      {R"({"kind":"url","url":"http://n1:1","host":"n1","leader":"x"})",
       "no integer since_ms"},
      // Nothing after the port: the Location is built on it.
      {R"({"kind":"url","url":"http://n1:1/x","host":"n1","leader":"x",)"
       R"("since_ms":0})",
       "no http://HOST:PORT"},
      {R"x({"kind":"url","url":"javascript:alert(1)","host":"n1",)x"
       R"("leader":"x","since_ms":0})",
       "no http://HOST:PORT"},
      {R"({"kind":"loopback","url":"http://a b:1","host":"n1",)"
       R"("leader":"x","since_ms":0})",
       "no http://HOST:PORT"},
  };
  for (const auto& [text, says] : cases) {
    auto parsed = ParseLeaderPage(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find(says), std::string::npos)
        << parsed.status().message();
  }
}

TEST(LeaderPageTest, ALoopbackBindIsPublishedAsLoopbackOnly) {
  for (const char* host :
       {"127.0.0.1", "127.3.4.5", "::1", "localhost", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
    EXPECT_EQ(PageToPublish(host, "http://127.0.0.1:5", "n1").kind,
              LeaderPage::Kind::kLoopbackOnly)
        << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.1.2.3", "n1", "fe80::1"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
    const LeaderPage page = PageToPublish(host, "http://n1:9100", "n1");
    EXPECT_EQ(page.kind, LeaderPage::Kind::kUrl) << host;
    EXPECT_EQ(page.url, "http://n1:9100");
    EXPECT_EQ(page.host, "n1");
  }
}

TEST(StandbyRedirectTest, GoesToTheLeaderWithTheSamePathAndQuery) {
  const StandbyView view = View();
  EXPECT_EQ(RedirectLocation(view, "/status.json", "/status.json?token=abc"),
            "http://n1:9100/status.json?token=abc");
  EXPECT_EQ(RedirectLocation(view, "/", "/?token=abc&x=1"),
            "http://n1:9100/?token=abc&x=1");
  EXPECT_EQ(RedirectLocation(view, "/index.html", "/index.html"),
            "http://n1:9100/index.html");
  // The path is the decoded one: an escaped spelling of a page goes to
  // the page.
  EXPECT_EQ(RedirectLocation(view, "/status.json", "/%73tatus.json?t=1"),
            "http://n1:9100/status.json?t=1");
  EXPECT_EQ(NoRedirectReason(view), "");
}

TEST(StandbyRedirectTest, NeverForMetricsOrAnUnknownPath) {
  const StandbyView view = View();
  EXPECT_EQ(RedirectLocation(view, "/metrics", "/metrics?token=a"),
            std::nullopt);
  EXPECT_EQ(RedirectLocation(view, "/x", "/x"), std::nullopt);
}

TEST(StandbyRedirectTest, ALocationHeaderCarriesNoRawByteOfTheQuery) {
  const std::string target = std::string("/?token=a\x01\x7f\xff") + " b#c";
  EXPECT_EQ(RedirectLocation(View(), "/", target),
            "http://n1:9100/?token=a%01%7F%FF%20b%23c");
}

TEST(StandbyRedirectTest, NoneWithoutAPageToGoToAndTheReasonSaysWhy) {
  struct Case {
    const char* name;
    void (*change)(StandbyView&);
    const char* says;
  };
  const Case cases[] = {
      {"no leader",
       [](StandbyView& v) {
         v.leader.clear();
         v.page.reset();
       },
       "no hvdrun leads job 'resnet-7' at this moment"},
      {"not published", [](StandbyView& v) { v.page.reset(); },
       "hvdrun pid 42 on n1, started 2027-01-15 07:59:00 UTC has published "
       "no status page in etcd (yet"},
      {"unreadable",
       [](StandbyView& v) {
         v.page.reset();
         v.page_error = "sealed with another secret";
       },
       "cannot be read: sealed with another secret"},
      {"loopback",
       [](StandbyView& v) {
         v.page->kind = LeaderPage::Kind::kLoopbackOnly;
         v.page->url = "http://127.0.0.1:41237";
       },
       "the leader's status page listens on loopback only: "
       "http://127.0.0.1:41237 answers on n1 alone (start the leader with "
       "--status-bind 0.0.0.0"},
      {"off", [](StandbyView& v) { v.page->kind = LeaderPage::Kind::kOff; },
       "runs without a status page (--status-bind none)"},
      {"taking over", [](StandbyView& v) { v.taking_over = true; },
       "this hvdrun leads job 'resnet-7' now and is taking it over"},
  };
  for (const Case& c : cases) {
    StandbyView view = View();
    c.change(view);
    EXPECT_EQ(RedirectLocation(view, "/status.json", "/status.json?t=1"),
              std::nullopt)
        << c.name;
    EXPECT_NE(NoRedirectReason(view).find(c.says), std::string::npos)
        << c.name << ": " << NoRedirectReason(view);
    const json status = StandbyJson(view, kNow);
    EXPECT_EQ(status["standby"]["no_redirect"], NoRedirectReason(view))
        << c.name;
    const std::string text = StatusText(status);
    EXPECT_NE(text.find("not followed: " + NoRedirectReason(view)),
              std::string::npos)
        << text;
  }
}

TEST(StandbyAnswerTest, ItsStatusJsonSaysWhoStandsByAndWhoLeads) {
  const json status = StandbyJson(View(), kNow);
  EXPECT_EQ(status["job"], (json{{"state", "standby"}, {"now_ms", kNow}}));
  const json& standby = status["standby"];
  EXPECT_EQ(standby["job_id"], "resnet-7");
  EXPECT_EQ(standby["etcd"], "e1:2379");
  EXPECT_EQ(standby["pid"], 7);
  EXPECT_EQ(standby["host"], "n2");
  EXPECT_EQ(standby["since_ms"], kNow - 10'000);
  EXPECT_EQ(standby["leader"], View().leader);
  EXPECT_EQ(standby["leader_since_ms"], kNow - 30'000);
  EXPECT_EQ(standby["leader_page"],
            (json{{"kind", "url"}, {"url", "http://n1:9100"}, {"host", "n1"}}));
  EXPECT_TRUE(standby["no_redirect"].is_null());

  StandbyView none = View();
  none.leader.clear();
  none.page.reset();
  const json alone = StandbyJson(none, kNow)["standby"];
  EXPECT_TRUE(alone["leader"].is_null());
  EXPECT_TRUE(alone["leader_since_ms"].is_null());
  EXPECT_TRUE(alone["leader_page"].is_null());
}

TEST(StandbyAnswerTest, HvdrunStatusPrintsWhoAnsweredAndWhoLeads) {
  const std::string text = StatusText(StandbyJson(View(), kNow));
  EXPECT_EQ(text,
            "answered by: standby hvdrun pid 7 on n2, started 2027-01-15 "
            "08:00:00 UTC for job 'resnet-7' in etcd at e1:2379, standing by "
            "since 10 s ago\n"
            "the job is led by hvdrun pid 42 on n1, started 2027-01-15 "
            "07:59:00 UTC, since 30 s ago; its status page: "
            "http://n1:9100\n");
  // Followed: the leader's status, after what the standby said.
  json followed = {{"job", {{"state", "running"}, {"now_ms", kNow}}},
                   {"standby", StandbyJson(View(), kNow)["standby"]}};
  const std::string both = StatusText(followed);
  EXPECT_EQ(both.rfind("answered by: standby hvdrun pid 7 on n2", 0), 0u)
      << both;
  EXPECT_NE(both.find("\njob: running, generation"), std::string::npos) << both;
}

TEST(StandbyAnswerTest, ItsPageEscapesWhatItShowsAndItsMetricsSayStandby) {
  StandbyView view = View();
  view.job_id = "<b>&";
  const std::string page = StandbyPageHtml(view, kNow);
  EXPECT_EQ(page.find("<b>&"), std::string::npos);
  EXPECT_NE(page.find("&lt;b&gt;&amp;"), std::string::npos);
  EXPECT_NE(page.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_NE(StandbyMetricsText(view).find("\nhvd_standby 1\n"),
            std::string::npos);
  EXPECT_NE(StandbyMetricsText(view).find("hvd_standby_leader_known 1\n"),
            std::string::npos);
  view.leader.clear();
  EXPECT_NE(StandbyMetricsText(view).find("hvd_standby_leader_known 0\n"),
            std::string::npos);
}

TEST(StatusTokenTest, EveryHvdrunOfAJobDerivesTheSameReadToken) {
  const std::string secret(64, 's');
  // HMAC-SHA256(secret, "hvd status page read token") in hex, as
  // `openssl dgst -sha256 -hmac` gives it: the rule docs/status.md states.
  EXPECT_EQ(StatusTokenFromJobSecret(secret),
            "6dce2b1edca5024aa5a29cca8e28f3e87b0fdbb3d12531bf80d77a6f38127ba9");
  EXPECT_EQ(StatusTokenFromJobSecret(secret), StatusTokenFromJobSecret(secret));
  EXPECT_NE(StatusTokenFromJobSecret(std::string(64, 't')),
            StatusTokenFromJobSecret(secret));
  EXPECT_EQ(StatusTokenFromJobSecret(secret).find(secret), std::string::npos);
}

TEST(StatusCommandRedirectTest, FollowsOneRedirectToHttpOnly) {
  EXPECT_TRUE(IsRedirect(307));
  EXPECT_TRUE(IsRedirect(302));
  EXPECT_FALSE(IsRedirect(200));
  EXPECT_FALSE(IsRedirect(304));
  auto next = RedirectTarget("http://n1:9100/status.json?token=a",
                             "http://n2:1", false);
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->origin, "http://n1:9100");
  EXPECT_EQ(next->target, "/status.json?token=a");
  EXPECT_TRUE(RedirectTarget("https://n1/status.json", "x", false).ok());

  auto twice = RedirectTarget("http://n3:1/status.json", "http://n1:9100",
                              /*followed=*/true);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find(
                "followed one redirect already, to http://n1:9100, which "
                "redirects again, to http://n3:1/status.json"),
            std::string::npos)
      << twice.status().message();
  for (const char* location :
       {"file:///etc/passwd", "/status.json", "", "http://", "ftp://n1/"}) {
    auto refused = RedirectTarget(location, "http://n2:1", false);
    ASSERT_FALSE(refused.ok()) << location;
    EXPECT_NE(refused.status().message().find("no http(s) URL: not followed"),
              std::string::npos)
        << refused.status().message();
  }
}

TEST(StatusCommandRedirectTest, AUrlSplitsIntoOriginAndTarget) {
  auto split = SplitStatusUrl("http://127.0.0.1:41237/?token=5f0c");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->origin, "http://127.0.0.1:41237");
  EXPECT_EQ(split->target, "/?token=5f0c");
  split = SplitStatusUrl("http://[::1]:9/x?y#z");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->origin, "http://[::1]:9");
  EXPECT_EQ(split->target, "/x?y");
  split = SplitStatusUrl("http://n1:9100");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->target, "/");
  split = SplitStatusUrl("http://n1:9100?token=a");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->target, "/?token=a");
  EXPECT_FALSE(SplitStatusUrl("n1:9100").ok());
}

// One server through both phases: the same port answers as a standby,
// then with the job's status.
TEST(StandbyServerTest, RedirectsWhileStandingByThenServesTheJob) {
  StatusServerOptions options;
  options.token = "a-read-token-of-16";
  auto server = StatusServer::Start(options, nullptr);
  ASSERT_TRUE(server.ok()) << server.status().message();
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(5));
  const std::string query = "?token=" + options.token;

  StandbyView view = View();
  view.page->kind = LeaderPage::Kind::kLoopbackOnly;
  (*server)->Follow(view);
  auto alone = client.Get("/status.json" + query);
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->status, 200);
  auto said = json::parse(alone->body);
  EXPECT_EQ(said["job"]["state"], "standby");
  EXPECT_NE(
      said["standby"]["no_redirect"].get<std::string>().find("loopback only"),
      std::string::npos);
  auto page = client.Get("/" + query);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("loopback only"), std::string::npos);

  (*server)->Follow(View());
  auto redirected = client.Get("/status.json" + query);
  ASSERT_TRUE(redirected);
  EXPECT_EQ(redirected->status, 307);
  EXPECT_EQ(redirected->get_header_value("Location"),
            "http://n1:9100/status.json" + query);
  EXPECT_EQ(json::parse(redirected->body)["standby"]["pid"], 7);
  auto metrics = client.Get("/metrics" + query);
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("\nhvd_standby 1\n"), std::string::npos);
  auto no_token = client.Get("/status.json");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);

  auto job = std::make_shared<const json>(
      json{{"job", {{"state", "running"}}}, {"hosts", json::array()}});
  (*server)->Lead([job] { return job; });
  auto led = client.Get("/status.json" + query);
  ASSERT_TRUE(led);
  EXPECT_EQ(led->status, 200);
  EXPECT_EQ(json::parse(led->body)["job"]["state"], "running");
  auto led_metrics = client.Get("/metrics" + query);
  ASSERT_TRUE(led_metrics);
  EXPECT_EQ(led_metrics->body.find("hvd_standby 1"), std::string::npos);
  (*server)->Stop();
}

}  // namespace
}  // namespace hvd::launcher
