// Worker reports: their JSON both ways, the ReportBoard's admission
// (slots and worker ids), replacement and limits, and the route
// POST /v1/elastic/report through the real RendezvousServer with a signed
// client (and without one).
#include "hvd/rendezvous/report_board.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "hvd/common/http_client.h"
#include "hvd/common/http_message.h"
#include "hvd/rendezvous/protocol.h"
#include "hvd/rendezvous/server.h"
#include "hvd/rendezvous/worker_report.h"

namespace hvd::rendezvous {
namespace {

using common::Code;
using common::Status;
using namespace std::chrono_literals;

constexpr char kSecret[] = "report-board-test-secret";

WorkerReport Report(const std::string& slot, int64_t worker,
                    int64_t steps = 1) {
  WorkerReport r;
  r.slot = slot;
  r.worker = worker;
  r.pid = 1234;
  r.generation = 3;
  r.rank = 1;
  r.size = 4;
  r.steps = steps;
  r.commits = 2;
  r.stalls = 0;
  r.ops["allreduce"] = OpCounter{345, 123456};
  r.ops["broadcast"] = OpCounter{3, 40};
  return r;
}

nlohmann::json Json(const WorkerReport& r) {
  return nlohmann::json::parse(EncodeReport(r));
}

// The decode error of `json` as text, or "" when it decodes.
std::string DecodeError(const std::string& json, Code* code = nullptr) {
  auto decoded = DecodeReport(json);
  if (decoded.ok()) return "";
  if (code) *code = decoded.status().code();
  return decoded.status().message();
}

TEST(WorkerReportTest, RoundTripsEveryField) {
  WorkerReport r = Report("host-a:1", 7);
  r.recovery = RecoveryMarks{3, 12.5, 30.25, 5.0};
  auto decoded = DecodeReport(EncodeReport(r));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->slot, "host-a:1");
  EXPECT_EQ(decoded->worker, 7);
  EXPECT_EQ(decoded->pid, 1234);
  EXPECT_EQ(decoded->generation, 3);
  EXPECT_EQ(decoded->rank, 1);
  EXPECT_EQ(decoded->size, 4);
  EXPECT_EQ(decoded->steps, 1);
  EXPECT_EQ(decoded->commits, 2);
  EXPECT_EQ(decoded->stalls, 0);
  EXPECT_EQ(decoded->ops, r.ops);
  ASSERT_TRUE(decoded->recovery);
  EXPECT_EQ(decoded->recovery->generation, 3);
  EXPECT_DOUBLE_EQ(decoded->recovery->connect_ms, 12.5);
  EXPECT_DOUBLE_EQ(decoded->recovery->sync_ms, 30.25);
  EXPECT_DOUBLE_EQ(decoded->recovery->first_step_ms, 5.0);
}

TEST(WorkerReportTest, TheWireShapeIsTheDocumentedOne) {
  nlohmann::json json = Json(Report("h:0", 7));
  EXPECT_EQ(json["slot"], "h:0");
  EXPECT_EQ(json["ops"]["allreduce"]["count"], 345);
  EXPECT_EQ(json["ops"]["allreduce"]["bytes"], 123456);
  EXPECT_FALSE(json.contains("recovery")) << "absent until marks exist";
  EXPECT_FALSE(json.contains("received")) << "server-side only";
  // A report written by hand from docs/protocol.md decodes.
  auto decoded = DecodeReport(R"({"slot": "h:0", "worker": 7, "pid": 1,
      "generation": 0, "rank": 0, "size": 1, "steps": 0, "commits": 0,
      "stalls": 0, "ops": {}, "recovery": {"generation": 0,
      "connect_ms": 1, "sync_ms": 0, "first_step_ms": 2.5},
      "some_later_field": [1, 2]})");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_DOUBLE_EQ(decoded->recovery->first_step_ms, 2.5);
}

TEST(WorkerReportTest, MalformedReportsNameTheField) {
  const std::string good = EncodeReport(Report("h:0", 1));
  Code code = Code::kOk;
  EXPECT_NE(DecodeError("{not json", &code).find("not JSON"),
            std::string::npos);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_NE(DecodeError("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(DecodeError("").find("not JSON"), std::string::npos);
  // Each field missing, or of the wrong type.
  for (const char* field : {"slot", "worker", "pid", "generation", "rank",
                            "size", "steps", "commits", "stalls", "ops"}) {
    nlohmann::json missing = nlohmann::json::parse(good);
    missing.erase(field);
    EXPECT_NE(DecodeError(missing.dump()).find(std::string("'") + field + "'"),
              std::string::npos)
        << field;
    nlohmann::json wrong = nlohmann::json::parse(good);
    const bool wants_text_or_object =
        field == std::string("slot") || field == std::string("ops");
    wrong[field] =
        wants_text_or_object ? nlohmann::json(3) : nlohmann::json("3");
    EXPECT_NE(DecodeError(wrong.dump()).find(std::string("'") + field + "'"),
              std::string::npos)
        << field;
  }
  nlohmann::json json = nlohmann::json::parse(good);
  json["steps"] = -1;
  EXPECT_NE(DecodeError(json.dump()).find("'steps'"), std::string::npos);
  json = nlohmann::json::parse(good);
  json["steps"] = 1.5;
  EXPECT_NE(DecodeError(json.dump()).find("'steps'"), std::string::npos);
  json = nlohmann::json::parse(good);
  json["pid"] = 1e30;
  EXPECT_NE(DecodeError(json.dump()).find("'pid'"), std::string::npos);
  json = nlohmann::json::parse(good);
  json["slot"] = "";
  EXPECT_NE(DecodeError(json.dump()).find("'slot'"), std::string::npos);
  json = nlohmann::json::parse(good);
  json["slot"] = std::string(kMaxReportSlotBytes + 1, 'h');
  EXPECT_NE(DecodeError(json.dump()).find("'slot'"), std::string::npos);
  json = nlohmann::json::parse(good);
  json["ops"]["allreduce"]["bytes"] = "many";
  EXPECT_NE(DecodeError(json.dump()).find("'ops.allreduce.bytes'"),
            std::string::npos);
  json = nlohmann::json::parse(good);
  json["ops"]["allreduce"] = 5;
  EXPECT_NE(DecodeError(json.dump()).find("'ops.allreduce'"),
            std::string::npos);
  json = nlohmann::json::parse(good);
  json["recovery"] = "soon";
  EXPECT_NE(DecodeError(json.dump()).find("'recovery'"), std::string::npos);
  json = nlohmann::json::parse(good);
  json["recovery"] = {{"generation", 1},
                      {"connect_ms", -2},
                      {"sync_ms", 0},
                      {"first_step_ms", 0}};
  EXPECT_NE(DecodeError(json.dump()).find("'recovery.connect_ms'"),
            std::string::npos);
  json["recovery"]["connect_ms"] = 1;
  json["recovery"].erase("first_step_ms");
  EXPECT_NE(DecodeError(json.dump()).find("'recovery.first_step_ms'"),
            std::string::npos);
  json["recovery"]["first_step_ms"] = 0;
  json["recovery"]["generation"] = "3";
  EXPECT_NE(DecodeError(json.dump()).find("'recovery.generation'"),
            std::string::npos);
}

TEST(WorkerReportTest, OpTypesAndNamesAreBounded) {
  nlohmann::json json = Json(Report("h:0", 1));
  json["ops"] = nlohmann::json::object();
  for (size_t i = 0; i < kMaxReportOps; ++i) {
    json["ops"]["op" + std::to_string(i)] = {{"count", 1}, {"bytes", 1}};
  }
  EXPECT_EQ(DecodeError(json.dump()), "") << "16 op types are fine";
  json["ops"]["one_more"] = {{"count", 1}, {"bytes", 1}};
  EXPECT_NE(DecodeError(json.dump()).find("'ops' has 17 op types"),
            std::string::npos);
  json["ops"] = {
      {std::string(kMaxReportOpNameBytes, 'a'), {{"count", 1}, {"bytes", 1}}}};
  EXPECT_EQ(DecodeError(json.dump()), "") << "32 characters are fine";
  json["ops"] = {{std::string(kMaxReportOpNameBytes + 1, 'a'),
                  {{"count", 1}, {"bytes", 1}}}};
  EXPECT_NE(DecodeError(json.dump()).find("op name"), std::string::npos);
  json["ops"] = {{"All-Reduce", {{"count", 1}, {"bytes", 1}}}};
  EXPECT_NE(DecodeError(json.dump()).find("op name 'All-Reduce'"),
            std::string::npos);
  json["ops"] = {{"", {{"count", 1}, {"bytes", 1}}}};
  EXPECT_NE(DecodeError(json.dump()).find("op name"), std::string::npos);
}

TEST(WorkerReportTest, OversizedBodyIsRefusedBeforeParsing) {
  std::string body = EncodeReport(Report("h:0", 1));
  body.insert(body.size() - 1,
              ", \"pad\": \"" + std::string(kMaxReportBytes, 'x') + "\"");
  Code code = Code::kOk;
  EXPECT_NE(DecodeError(body, &code).find("over the limit of 16384"),
            std::string::npos);
  EXPECT_EQ(code, Code::kResourceExhausted);
}

TEST(ReportBoardTest, RefusesSlotsNotAdmittedAndStoresNothing) {
  ReportBoard board;
  Status refused = board.Submit(Report("h:0", 1));
  EXPECT_EQ(refused.code(), Code::kNotFound);
  EXPECT_NE(refused.message().find("not running in this job"),
            std::string::npos);
  EXPECT_TRUE(board.Latest().empty());
  board.Admit({{"h:1", 1}});
  EXPECT_EQ(board.Submit(Report("h:0", 1)).code(), Code::kNotFound);
  EXPECT_TRUE(board.Latest().empty());
}

TEST(ReportBoardTest, KeepsTheLatestReportOfEachSlotAndCountsThem) {
  ReportBoard board;
  board.Admit({{"h:0", 1}, {"h:1", 2}});
  const auto t0 = std::chrono::steady_clock::time_point{} + 100s;
  ASSERT_TRUE(board.Submit(Report("h:0", 1, 10), t0).ok());
  ASSERT_TRUE(board.Submit(Report("h:0", 1, 11), t0 + 1s).ok());
  ASSERT_TRUE(board.Submit(Report("h:1", 2, 5), t0 + 2s).ok());
  auto latest = board.Latest();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest["h:0"].steps, 11);
  EXPECT_EQ(latest["h:0"].received_count, 2);
  EXPECT_EQ(latest["h:0"].received, t0 + 1s);
  EXPECT_EQ(latest["h:1"].steps, 5);
  EXPECT_EQ(latest["h:1"].received_count, 1);
  // Latest() is a copy.
  latest["h:0"].steps = 99;
  EXPECT_EQ(board.Latest()["h:0"].steps, 11);
}

TEST(ReportBoardTest, AReplacedWorkersReportIsRefused) {
  ReportBoard board;
  board.Admit({{"h:0", 7}});
  ASSERT_TRUE(board.Submit(Report("h:0", 7, 10)).ok());
  // hvdrun replaced worker 7 with worker 9 (say, 7 was cut off by a
  // partition): 7's later reports must not overwrite 9's.
  board.Admit({{"h:0", 9}});
  EXPECT_TRUE(board.Latest().empty()) << "7's report goes with its admission";
  ASSERT_TRUE(board.Submit(Report("h:0", 9, 1)).ok());
  Status late = board.Submit(Report("h:0", 7, 500));
  EXPECT_EQ(late.code(), Code::kNotFound);
  EXPECT_NE(late.message().find("belongs to worker 9, not to worker 7"),
            std::string::npos)
      << late.ToString();
  auto latest = board.Latest();
  EXPECT_EQ(latest["h:0"].worker, 9);
  EXPECT_EQ(latest["h:0"].steps, 1);
  EXPECT_EQ(latest["h:0"].received_count, 1);
}

TEST(ReportBoardTest, AdmitReplacesTheWholeListAndKeepsWhatStays) {
  ReportBoard board;
  board.Admit({{"h:0", 1}, {"h:1", 2}, {"h:2", 3}});
  for (auto [slot, worker] :
       {std::pair{"h:0", 1}, std::pair{"h:1", 2}, std::pair{"h:2", 3}}) {
    ASSERT_TRUE(board.Submit(Report(slot, worker)).ok());
  }
  // h:0 stays (its worker may have exited: its last report stays too),
  // h:1 is dropped, h:2 has a new process, h:3 is new.
  board.Admit({{"h:0", 1}, {"h:2", 4}, {"h:3", 5}});
  auto latest = board.Latest();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest.count("h:0"), 1u);
  EXPECT_EQ(latest["h:0"].received_count, 1);
  EXPECT_EQ(board.Submit(Report("h:1", 2)).code(), Code::kNotFound);
  EXPECT_EQ(board.Submit(Report("h:2", 3)).code(), Code::kNotFound);
  EXPECT_TRUE(board.Submit(Report("h:2", 4)).ok());
  EXPECT_TRUE(board.Submit(Report("h:3", 5)).ok());
  EXPECT_EQ(board.Latest().size(), 3u);
  board.Admit({});
  EXPECT_TRUE(board.Latest().empty());
}

TEST(ReportBoardTest, SubmitJsonParsesAndRefusesWithoutStoring) {
  ReportBoard board;
  board.Admit({{"h:0", 1}});
  EXPECT_EQ(board.SubmitJson("{").code(), Code::kInvalidArgument);
  EXPECT_EQ(board.SubmitJson(std::string(kMaxReportBytes + 1, ' ')).code(),
            Code::kResourceExhausted);
  EXPECT_TRUE(board.Latest().empty());
  ASSERT_TRUE(board.SubmitJson(EncodeReport(Report("h:0", 1, 42))).ok());
  EXPECT_EQ(board.Latest()["h:0"].steps, 42);
}

TEST(ReportBoardTest, ListenerHearsEveryStoredReportOnly) {
  ReportBoard board;
  int heard = 0;
  board.SetListener([&] { ++heard; });
  board.Admit({{"h:0", 1}});
  ASSERT_TRUE(board.Submit(Report("h:0", 1)).ok());
  ASSERT_FALSE(board.Submit(Report("h:1", 1)).ok());
  ASSERT_FALSE(board.SubmitJson("nope").ok());
  ASSERT_TRUE(board.Submit(Report("h:0", 1)).ok());
  EXPECT_EQ(heard, 2);
}

// The route, through the real server over loopback.
class ReportRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.secret = kSecret;
    options.threads = 4;
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  common::HttpResponse Post(const std::string& body,
                            const std::string& secret = kSecret,
                            const std::string& method = "POST") {
    common::HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.secret = secret;
    options.max_attempts = 1;
    common::HttpClient client(options);
    auto answer = client.Send(method, protocol::kReportPath, body);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? *answer : common::HttpResponse{};
  }

  // The error answer's message.
  static std::string Message(const common::HttpResponse& answer) {
    auto json = nlohmann::json::parse(answer.body, nullptr, false);
    if (!json.is_object() || !json.contains("message")) return answer.body;
    return json["message"].get<std::string>();
  }

  std::unique_ptr<RendezvousServer> server_;
};

TEST_F(ReportRouteTest, AnAdmittedWorkersReportIsStored) {
  server_->reports().Admit({{"host-a:0", 7}});
  WorkerReport r = Report("host-a:0", 7, 120);
  r.recovery = RecoveryMarks{3, 12.5, 30.1, 5.0};
  const auto before = std::chrono::steady_clock::now();
  common::HttpResponse answer = Post(EncodeReport(r));
  EXPECT_EQ(answer.status, 200) << answer.body;
  auto latest = server_->reports().Latest();
  ASSERT_EQ(latest.count("host-a:0"), 1u);
  const WorkerReport& stored = latest["host-a:0"];
  EXPECT_EQ(stored.steps, 120);
  EXPECT_EQ(stored.ops.at("allreduce"), (OpCounter{345, 123456}));
  ASSERT_TRUE(stored.recovery);
  EXPECT_DOUBLE_EQ(stored.recovery->sync_ms, 30.1);
  EXPECT_GE(stored.received, before);
  EXPECT_LE(stored.received, std::chrono::steady_clock::now());
  EXPECT_EQ(stored.received_count, 1);
}

TEST_F(ReportRouteTest, RefusalsAnswerWithTheirStatus) {
  server_->reports().Admit({{"host-a:0", 7}});
  // Not admitted, or another process: 404.
  common::HttpResponse answer = Post(EncodeReport(Report("host-b:0", 7)));
  EXPECT_EQ(answer.status, 404);
  EXPECT_NE(Message(answer).find("not running in this job"), std::string::npos);
  answer = Post(EncodeReport(Report("host-a:0", 8)));
  EXPECT_EQ(answer.status, 404);
  EXPECT_NE(Message(answer).find("belongs to worker 7, not to worker 8"),
            std::string::npos)
      << answer.body;
  // Malformed: 400 naming the field.
  answer = Post("{\"slot\": 5}");
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(Message(answer).find("'slot'"), std::string::npos) << answer.body;
  answer = Post("\xff\xfe garbage");
  EXPECT_EQ(answer.status, 400);
  // Over 16 KiB (under the server's body limit): 413.
  answer = Post(std::string(kMaxReportBytes + 1, ' '));
  EXPECT_EQ(answer.status, 413);
  EXPECT_NE(Message(answer).find("16384"), std::string::npos);
  // Another method: no such route.
  answer = Post(EncodeReport(Report("host-a:0", 7)), kSecret, "GET");
  EXPECT_EQ(answer.status, 404);
  // Signed with another secret: 401.
  answer = Post(EncodeReport(Report("host-a:0", 7)), "not-the-secret");
  EXPECT_EQ(answer.status, 401);
  EXPECT_TRUE(server_->reports().Latest().empty());
}

TEST_F(ReportRouteTest, ReportsOfReplacedWorkersDoNotOverwrite) {
  server_->reports().Admit({{"host-a:0", 7}});
  ASSERT_EQ(Post(EncodeReport(Report("host-a:0", 7, 1))).status, 200);
  server_->reports().Admit({{"host-a:0", 9}});
  ASSERT_EQ(Post(EncodeReport(Report("host-a:0", 9, 2))).status, 200);
  EXPECT_EQ(Post(EncodeReport(Report("host-a:0", 7, 3))).status, 404);
  auto latest = server_->reports().Latest();
  EXPECT_EQ(latest["host-a:0"].worker, 9);
  EXPECT_EQ(latest["host-a:0"].steps, 2);
}

}  // namespace
}  // namespace hvd::rendezvous
