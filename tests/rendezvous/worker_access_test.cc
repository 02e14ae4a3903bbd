// What a worker's own key may do at the rendezvous server (issue 33): the
// pure rules (src/worker_access.h), the board's membership, and the server
// end to end, where acting beyond itself is 403 and logged once.
#include "worker_access.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hvd/common/http_client.h"
#include "hvd/rendezvous/client.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/protocol.h"
#include "hvd/rendezvous/server.h"
#include "hvd/rendezvous/worker_report.h"

namespace hvd::rendezvous::internal {
namespace {

using common::Code;
using common::WorkerIdentity;
using namespace std::chrono_literals;

constexpr char kSecret[] = "worker-access-test-secret";

TEST(GlooKeyTest, TheGenerationOfAKeyIsItsPrefixsAsWritten) {
  EXPECT_EQ(protocol::GlooGenerationPrefix(12), "g12/");
  EXPECT_EQ(protocol::GlooKeyGeneration("g12/global/0"), 12);
  EXPECT_EQ(protocol::GlooKeyGeneration("g0/nccl/set0.0/n0"), 0);
  for (const char* other :
       {"", "g", "g/", "g12", "x12/a", "g-1/a", "g-0/a", "g+1/a", "g01/a",
        "g1a/b", "g99999999999999999999/a"}) {
    EXPECT_FALSE(protocol::GlooKeyGeneration(other)) << other;
  }
}

TEST(WorkerAccessTest, AWorkerActsForItsOwnSlotAndProcessOnly) {
  const WorkerIdentity who{7, "n1:0"};
  EXPECT_TRUE(WorkerMayActFor(who, "n1:0", 7, "check-in").ok());
  for (auto [slot, worker] :
       {std::pair{"n1:1", 7}, std::pair{"n1:0", 8}, std::pair{"n1:0", 0}}) {
    auto denied = WorkerMayActFor(who, slot, worker, "report");
    EXPECT_EQ(denied.code(), Code::kPermissionDenied) << slot << worker;
    EXPECT_NE(denied.message().find("worker 7 (slot n1:0) may not send a "
                                    "report"),
              std::string::npos)
        << denied.message();
  }
}

TEST(WorkerAccessTest, AWorkerWritesOnlyUnderItsGenerationsInTheGlooScope) {
  const WorkerIdentity who{7, "n1:0"};
  auto member_of = [](int64_t generation) { return generation == 3; };
  auto may = [&](const char* method, const char* scope, const char* key) {
    KvPath path{scope, key ? std::optional<std::string>(key) : std::nullopt};
    return WorkerMayUseKv(who, method, path, member_of);
  };
  EXPECT_TRUE(may("PUT", "gloo", "g3/global/0").ok());
  EXPECT_TRUE(may("DELETE", "gloo", "g3/global/0").ok());
  EXPECT_TRUE(may("GET", "gloo", "g2/global/0").ok()) << "reads are free";
  EXPECT_TRUE(may("GET", "gloo", nullptr).ok()) << "a prefix wait";
  for (auto [method, scope, key, why] :
       {std::tuple{"PUT", "gloo", "g2/global/0", "not a member"},
        std::tuple{"DELETE", "gloo", "g4/x", "not a member"},
        std::tuple{"PUT", "gloo", "global/0", "under a generation"},
        std::tuple{"PUT", "gloo", "g03/x", "under a generation"},
        std::tuple{"DELETE", "gloo", static_cast<const char*>(nullptr),
                   "whole scope"},
        std::tuple{"PUT", "other", "g3/x", "uses only the 'gloo' scope"},
        std::tuple{"GET", "other", "g3/x", "uses only the 'gloo' scope"}}) {
    auto denied = may(method, scope, key);
    EXPECT_EQ(denied.code(), Code::kPermissionDenied) << method << key;
    EXPECT_NE(denied.message().find(why), std::string::npos)
        << denied.message();
  }
}

TEST(ElasticBoardMembershipTest, MembersAreTheNewestGenerationsProcesses) {
  ElasticBoard board;
  // No generation yet (a static job): every worker may use any.
  EXPECT_TRUE(board.IsMember(0, "n1:0", 7));
  EXPECT_TRUE(board.IsMember(5, "n9:0", 1));
  GenerationPlan plan;
  plan.generation = 3;
  plan.slots["n1:0"] = WorkerAssignment{};
  plan.slots["n2:0"] = WorkerAssignment{};
  plan.workers["n1:0"] = 7;  // n2:0 lists no process: any
  ASSERT_TRUE(board.Publish(plan).ok());
  EXPECT_TRUE(board.IsMember(3, "n1:0", 7));
  EXPECT_TRUE(board.IsMember(3, "n2:0", 12));
  EXPECT_FALSE(board.IsMember(3, "n1:0", 8)) << "a process hvdrun replaced";
  EXPECT_FALSE(board.IsMember(3, "n3:0", 7)) << "a slot not in it";
  EXPECT_FALSE(board.IsMember(2, "n1:0", 7)) << "an older generation";
  EXPECT_FALSE(board.IsMember(4, "n1:0", 7)) << "one not formed yet";
}

class WorkerAtServerTest : public ::testing::Test {
 protected:
  // The etcd backend's server: check-in answers carry generation keys.
  virtual bool GenerationKeys() const { return false; }

  void SetUp() override {
    log_ = std::make_shared<std::ostringstream>();
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(*log_));
    logger->set_pattern("%v");
    spdlog::set_default_logger(logger);
    ServerOptions options;
    options.secret = kSecret;
    options.generation_keys = GenerationKeys();
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    GenerationPlan plan;
    plan.generation = 3;
    for (const char* slot : {"n1:0", "n1:1"}) {
      plan.slots[slot] = WorkerAssignment{};
      plan.slots[slot].generation = 3;
    }
    plan.workers = {{"n1:0", 7}, {"n1:1", 8}};
    ASSERT_TRUE(server_->board().Publish(plan).ok());
    server_->reports().Admit(plan.workers);
  }
  void TearDown() override {
    server_.reset();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("off"));
  }

  common::HttpClientOptions As(WorkerIdentity who) {
    common::HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.secret = common::WorkerKey(kSecret, who);
    options.worker = who;
    return options;
  }

  std::string Report(const std::string& slot, int64_t worker) {
    WorkerReport report;
    report.slot = slot;
    report.worker = worker;
    return EncodeReport(report);
  }

  std::shared_ptr<std::ostringstream> log_;
  std::unique_ptr<RendezvousServer> server_;
};

TEST_F(WorkerAtServerTest, AMemberWritesItsGenerationsKeysAndNothingElse) {
  RendezvousClient worker(As({7, "n1:0"}));
  ASSERT_TRUE(worker.Set("gloo", "g3/global/0", "addr").ok());
  EXPECT_EQ(*worker.Get("gloo", "g3/global/0"), "addr");
  EXPECT_EQ(worker.Set("gloo", "g2/global/0", "addr").code(),
            Code::kPermissionDenied);
  EXPECT_EQ(worker.Set("elsewhere", "k", "v").code(), Code::kPermissionDenied);
  EXPECT_EQ(worker.DeleteScope("gloo").status().code(),
            Code::kPermissionDenied);
  // A process hvdrun replaced holds a key that names itself: no member.
  RendezvousClient replaced(As({6, "n1:0"}));
  EXPECT_EQ(replaced.Set("gloo", "g3/global/0", "evil").code(),
            Code::kPermissionDenied);
  EXPECT_EQ(*worker.Get("gloo", "g3/global/0"), "addr");
}

TEST_F(WorkerAtServerTest, CheckInsAndReportsForAnotherSlotAre403) {
  RendezvousClient worker(As({7, "n1:0"}));
  for (auto [slot, id] :
       {std::pair{"n1:1", 8}, std::pair{"n1:1", 7}, std::pair{"n1:0", 8}}) {
    auto checked_in = worker.CheckIn(slot, 0, "127.0.0.1:1", 10ms, id);
    EXPECT_EQ(checked_in.status().code(), Code::kPermissionDenied)
        << checked_in.status().ToString();
  }
  EXPECT_TRUE(server_->board().Missing().size() == 2)
      << "no refused check-in counts";
  common::HttpClient http(As({7, "n1:0"}));
  auto foreign = http.Send("POST", protocol::kReportPath, Report("n1:1", 8));
  ASSERT_TRUE(foreign.ok()) << foreign.status().ToString();
  EXPECT_EQ(foreign->status, 403) << foreign->body;
  EXPECT_EQ(server_->reports().Latest().count("n1:1"), 0u);
  auto own = http.Send("POST", protocol::kReportPath, Report("n1:0", 7));
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->status, 200) << own->body;
  // Its own check-in goes through (and waits for n1:1, which is late).
  auto waited = worker.CheckIn("n1:0", 0, "127.0.0.1:1", 10ms, 7);
  EXPECT_EQ(waited.status().code(), Code::kTimeout)
      << waited.status().ToString();
  EXPECT_EQ(server_->board().Missing(), std::vector<std::string>{"n1:1"});
}

TEST_F(WorkerAtServerTest, EachWorkersRefusalsAreLoggedOnce) {
  RendezvousClient seven(As({7, "n1:0"}));
  RendezvousClient eight(As({8, "n1:1"}));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(seven.Set("x", "k", "v").code(), Code::kPermissionDenied);
    EXPECT_EQ(eight.Set("gloo", "g1/k", "v").code(), Code::kPermissionDenied);
  }
  const std::string log = log_->str();
  auto count = [&log](const std::string& needle) {
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos;
         at = log.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("refused (403)"), 2u) << log;
  EXPECT_EQ(count("worker 7 (slot n1:0)"), 2u) << log;  // who, and the why
  EXPECT_EQ(count("not a member of generation 1"), 1u) << log;
}

// With the etcd backend each member's check-in answer carries the
// generation's key, wrapped so that only that member can read it; the
// embedded backend's answers carry none.
class EtcdWorkerAtServerTest : public WorkerAtServerTest {
 protected:
  bool GenerationKeys() const override { return true; }

  // Both members of generation 3 check in at once: their answers.
  std::vector<WorkerAssignment> BothCheckIn() {
    std::vector<common::Result<WorkerAssignment>> got(
        2, common::Status::Internal("not run"));
    std::thread other([&] {
      got[1] = RendezvousClient(As({8, "n1:1"}))
                   .CheckIn("n1:1", 0, "127.0.0.1:1", 10s, 8);
    });
    got[0] = RendezvousClient(As({7, "n1:0"}))
                 .CheckIn("n1:0", 0, "127.0.0.1:1", 10s, 7);
    other.join();
    std::vector<WorkerAssignment> answers;
    for (auto& answer : got) {
      EXPECT_TRUE(answer.ok()) << answer.status().ToString();
      if (answer.ok()) answers.push_back(*answer);
    }
    return answers;
  }
};

TEST_F(EtcdWorkerAtServerTest, EachMemberReadsItsGenerationsKeyAndNoOneElse) {
  const auto answers = BothCheckIn();
  ASSERT_EQ(answers.size(), 2u);
  const std::string key =
      common::GenerationKey(common::GenerationsKey(kSecret), 3);
  const std::string seven = common::WorkerKey(kSecret, {7, "n1:0"});
  const std::string eight = common::WorkerKey(kSecret, {8, "n1:1"});
  EXPECT_EQ(*common::UnwrapGenerationKey(seven, 3, answers[0].generation_key),
            key);
  EXPECT_EQ(*common::UnwrapGenerationKey(eight, 3, answers[1].generation_key),
            key);
  // On the wire each is wrapped for its reader alone.
  EXPECT_NE(answers[0].generation_key, key);
  EXPECT_NE(answers[0].generation_key, answers[1].generation_key);
  EXPECT_NE(*common::UnwrapGenerationKey(eight, 3, answers[0].generation_key),
            key);
  EXPECT_NE(*common::UnwrapGenerationKey(seven, 4, answers[0].generation_key),
            key);
}

TEST_F(WorkerAtServerTest, WithoutEtcdACheckInAnswerCarriesNoKey) {
  std::thread other([&] {
    (void)RendezvousClient(As({8, "n1:1"}))
        .CheckIn("n1:1", 0, "127.0.0.1:1", 10s, 8);
  });
  auto answer = RendezvousClient(As({7, "n1:0"}))
                    .CheckIn("n1:0", 0, "127.0.0.1:1", 10s, 7);
  other.join();
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->generation, 3);
  EXPECT_EQ(answer->generation_key, "");
}

}  // namespace
}  // namespace hvd::rendezvous::internal
