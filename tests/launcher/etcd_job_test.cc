// EtcdJob on a real etcd member: an hvdrun claims a job id and takes its
// prefix over, a second claim is refused naming the leader, old
// generations' Gloo keys go as new ones are published, the driver's state
// is kept sealed, and a finished job leaves no key.
#include "driver/etcd_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include "etcd_member.h"
#include "hvd/rendezvous/etcd_seal.h"

namespace hvd::launcher {
namespace {

using namespace std::chrono_literals;
using rendezvous::EtcdClient;

const std::string kSecret(64, 's');

// The machine's name is outside text: one that is not UTF-8 is replaced in
// the leader's identity, not thrown.
TEST(LeaderIdentityTest, AMachineNameThatIsNotUtf8IsReplaced) {
  std::string identity;
  ASSERT_NO_THROW(identity = LeaderIdentity("n\xff", 42, 0));
  EXPECT_NE(identity.find("n\xef\xbf\xbd"), std::string::npos) << identity;
}

class EtcdJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(member_.Start());
    config_.rendezvous_backend = RendezvousBackend::kEtcd;
    config_.rendezvous_endpoint =
        "127.0.0.1:" + std::to_string(member_.client_port());
    config_.job_id = "j";
    config_.command = {"python3", "train.py"};
    etcd_ = std::make_unique<EtcdClient>(
        testing::EtcdOptionsFor({member_.client_port()}));
  }

  std::vector<std::string> Keys(const std::string& prefix) {
    auto kvs = etcd_->Range(prefix, true);
    EXPECT_TRUE(kvs.ok()) << kvs.status().ToString();
    std::vector<std::string> keys;
    if (kvs.ok()) {
      for (const auto& kv : *kvs) keys.push_back(kv.key);
    }
    return keys;
  }

  // Waits up to 10 s for `prefix` to hold exactly `want`.
  bool KeysBecome(const std::string& prefix,
                  const std::vector<std::string>& want) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (Keys(prefix) != want) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  testing::EtcdMember member_;
  LaunchConfig config_;
  std::unique_ptr<EtcdClient> etcd_;
};

std::string PublicKey(const std::string& secret) {
  return common::JobSigningKey::FromSecret(secret)->public_key();
}

TEST_F(EtcdJobTest, OneClaimPerJobIdAndAFinishedJobLeavesNoKey) {
  auto first = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->prefix(), "/hvd/jobs/j/");
  EXPECT_EQ(
      Keys("/hvd/jobs/j/"),
      (std::vector<std::string>{"/hvd/jobs/j/leader", "/hvd/jobs/j/settings"}));
  auto second = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_FALSE(second.ok());
  const std::string& message = second.status().message();
  EXPECT_NE(message.find("job 'j' already has a leader in etcd at " +
                         config_.rendezvous_endpoint + ": hvdrun pid " +
                         std::to_string(getpid()) + " on "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Give this job another --job-id"), std::string::npos);
  // Another id is another job.
  LaunchConfig other = config_;
  other.job_id = "k";
  EXPECT_TRUE(EtcdJob::Claim(other, kSecret, 5000ms).ok());
  (*first)->Finish();
  EXPECT_EQ(Keys("/hvd/jobs/j/"), std::vector<std::string>{});
  // The lead was given back, not left to expire: the id is free at once.
  EXPECT_TRUE(EtcdJob::Claim(config_, kSecret, 5000ms).ok());
}

TEST_F(EtcdJobTest, AClaimTakesOverWhatAnEarlierRunLeftUnderTheId) {
  ASSERT_TRUE(etcd_->Put("/hvd/jobs/j/gloo/g0/global/0", "stale").ok());
  ASSERT_TRUE(etcd_->Put("/hvd/jobs/j/state", "a crashed run's").ok());
  auto job = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(Keys("/hvd/jobs/j/gloo/"), std::vector<std::string>{});
  EXPECT_EQ(Keys("/hvd/jobs/j/state"), std::vector<std::string>{});
  auto settings = etcd_->Range("/hvd/jobs/j/settings");
  ASSERT_TRUE(settings.ok() && settings->size() == 1u);
  auto opened = rendezvous::OpenSignedEtcdValue(
      PublicKey(kSecret), "/hvd/jobs/j/settings", (*settings)[0].value);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_NE(opened->find(R"("command":["python3","train.py"])"),
            std::string::npos)
      << *opened;
}

TEST_F(EtcdJobTest, TheNewestDriverStateIsKeptSigned) {
  auto job = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  (*job)->SaveState("first");
  (*job)->SaveState("second");
  (*job)->Run([](const LeadChange&) {});
  auto state = [&]() -> std::string {
    auto kvs = etcd_->Range("/hvd/jobs/j/state");
    if (!kvs.ok() || kvs->empty()) return "";
    auto opened = rendezvous::OpenSignedEtcdValue(
        PublicKey(kSecret), "/hvd/jobs/j/state", (*kvs)[0].value);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? *opened : "";
  };
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (state() != "second" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(state(), "second");
  // Only the newest was written: one revision of the key.
  auto kvs = etcd_->Range("/hvd/jobs/j/state");
  ASSERT_TRUE(kvs.ok() && kvs->size() == 1u);
  EXPECT_EQ((*kvs)[0].version, 1);
  (*job)->SaveState("third");
  const auto later = std::chrono::steady_clock::now() + 10s;
  while (state() != "third" && std::chrono::steady_clock::now() < later) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(state(), "third");
  // Another job's public key does not verify it, nor does it verify
  // under another key name.
  kvs = etcd_->Range("/hvd/jobs/j/state");
  ASSERT_TRUE(kvs.ok() && kvs->size() == 1u);
  EXPECT_EQ(
      rendezvous::OpenSignedEtcdValue(PublicKey(std::string(64, 't')),
                                      "/hvd/jobs/j/state", (*kvs)[0].value)
          .status()
          .code(),
      common::Code::kUnauthenticated);
  EXPECT_EQ(rendezvous::OpenSignedEtcdValue(
                PublicKey(kSecret), "/hvd/jobs/j/settings", (*kvs)[0].value)
                .status()
                .code(),
            common::Code::kUnauthenticated);
  (*job)->Finish();
  EXPECT_EQ(Keys("/hvd/jobs/j/"), std::vector<std::string>{});
}

TEST_F(EtcdJobTest, PublishedGenerationsDropTheKeysOfAllButThePrevious) {
  auto job = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  for (int g = 0; g < 4; ++g) {
    ASSERT_TRUE(
        etcd_->Put("/hvd/jobs/j/gloo/g" + std::to_string(g) + "/global/0", "v")
            .ok());
  }
  (*job)->Run([](const LeadChange&) {});
  (*job)->GenerationPublished(3);
  EXPECT_TRUE(KeysBecome("/hvd/jobs/j/gloo/", {"/hvd/jobs/j/gloo/g2/global/0",
                                               "/hvd/jobs/j/gloo/g3/global/0"}))
      << ::testing::PrintToString(Keys("/hvd/jobs/j/gloo/"));
  (*job)->Finish();
  EXPECT_EQ(Keys("/hvd/jobs/j/"), std::vector<std::string>{});
}

// --standby: waits while another hvdrun leads, then reads what it left.
class EtcdStandbyTest : public EtcdJobTest {
 protected:
  void SetUp() override {
    EtcdJobTest::SetUp();
    ASSERT_EQ(pipe(quiet_), 0);  // no signal ever comes
    config_.standby = true;
  }
  void TearDown() override {
    close(quiet_[0]);
    close(quiet_[1]);
  }
  common::Result<std::unique_ptr<EtcdJob>> Standby(const std::string& secret,
                                                   std::string& state) {
    int signal = 0;
    return EtcdJob::Standby(config_, secret, quiet_[0], state, signal);
  }
  // Revokes the leading hvdrun's lease: its leader key goes, its job's
  // keys stay.
  void CrashLeader() {
    auto leader = etcd_->Range("/hvd/jobs/j/leader");
    ASSERT_TRUE(leader.ok() && leader->size() == 1u);
    ASSERT_TRUE(etcd_->RevokeLease((*leader)[0].lease).ok());
  }
  int quiet_[2] = {-1, -1};
};

TEST_F(EtcdStandbyTest, TakesOverWithTheStateTheLeaderLeft) {
  auto leader = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  (*leader)->SaveState("the state");
  (*leader)->Run([](const LeadChange&) {});
  std::string state;
  std::thread resign([&] {
    // Once the state is in etcd, the leader's lease ends without its
    // job's keys going, as when its machine crashes.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (Keys("/hvd/jobs/j/state").empty() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    CrashLeader();
  });
  auto standby = Standby(kSecret, state);
  resign.join();
  ASSERT_TRUE(standby.ok()) << standby.status().ToString();
  EXPECT_EQ(state, "the state");
  auto status = (*standby)->StatusJson();
  ASSERT_TRUE(status.contains("takeover")) << status.dump();
  EXPECT_NE(status["takeover"]["from"].get<std::string>().find(
                "hvdrun pid " + std::to_string(getpid())),
            std::string::npos)
      << status.dump();
  EXPECT_LE(status["takeover"]["detected_ms"].get<int64_t>(),
            status["takeover"]["elected_ms"].get<int64_t>());
}

// While it stands by, a standby tells its status server who leads and
// where the leader's page is, as the leader published it in etcd; then
// that it takes the job over.
TEST_F(EtcdStandbyTest, TellsWhoLeadsAndWhereItsStatusPageIs) {
  auto leader = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  (*leader)->SaveState("the state");
  LeaderPage page;
  page.kind = LeaderPage::Kind::kUrl;
  page.url = "http://n1:9100";
  page.host = "n1";
  (*leader)->SaveStatusPage(page);
  (*leader)->Run([](const LeadChange&) {});
  std::mutex mu;
  std::condition_variable told;
  std::vector<StandbyView> views;
  auto watch = [&](const StandbyView& view) {
    std::lock_guard<std::mutex> lock(mu);
    views.push_back(view);
    told.notify_all();
  };
  std::thread crash([&] {
    // Once the standby knows the page, the leader's lease ends.
    std::unique_lock<std::mutex> lock(mu);
    told.wait_for(lock, 10s,
                  [&] { return !views.empty() && views.back().page; });
    lock.unlock();
    CrashLeader();
  });
  std::string state;
  int signal = 0;
  auto standby =
      EtcdJob::Standby(config_, kSecret, quiet_[0], state, signal, watch);
  crash.join();
  ASSERT_TRUE(standby.ok()) << standby.status().ToString();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(views.size(), 3u);
  // First: standing by, no leader known yet.
  EXPECT_EQ(views.front().job_id, "j");
  EXPECT_EQ(views.front().pid, getpid());
  EXPECT_EQ(views.front().leader, "");
  // Then the leader and its page (a view may say between them that no
  // hvdrun leads: the lease ended, and the standby has not won yet).
  auto with_page = std::find_if(views.rbegin(), views.rend(),
                                [](const StandbyView& v) { return v.page; });
  ASSERT_NE(with_page, views.rend());
  const StandbyView& knew = *with_page;
  EXPECT_EQ(knew.page->url, "http://n1:9100");
  EXPECT_EQ(knew.page->kind, LeaderPage::Kind::kUrl);
  EXPECT_EQ(knew.leader.rfind("hvdrun pid " + std::to_string(getpid()), 0), 0u)
      << knew.leader;
  EXPECT_EQ(knew.leader_since_ms, knew.page->since_ms);
  EXPECT_GT(knew.leader_since_ms, 0);
  EXPECT_EQ(RedirectLocation(knew, "/", "/?token=t"),
            "http://n1:9100/?token=t");
  // Last: this standby leads and takes the job over.
  EXPECT_TRUE(views.back().taking_over);
  EXPECT_EQ(RedirectLocation(views.back(), "/", "/"), std::nullopt);
}

TEST_F(EtcdStandbyTest, RefusesAnotherSecretAnEndedJobAndAnotherCommand) {
  auto leader = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  CrashLeader();
  std::string state;
  auto wrong = Standby(std::string(64, 't'), state);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find(
                "are signed with another secret than --job-secret-file's"),
            std::string::npos)
      << wrong.status().message();
  config_.command = {"python3", "other.py"};
  auto other = Standby(kSecret, state);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(
      other.status().message().find("runs another command than this standby's"),
      std::string::npos)
      << other.status().message();
  config_.command = {"python3", "train.py"};
  auto no_state = Standby(kSecret, state);
  ASSERT_FALSE(no_state.ok());
  EXPECT_NE(no_state.status().message().find("left no driver state"),
            std::string::npos)
      << no_state.status().message();
  // A job that ended deleted its keys: nothing to take over, once the
  // start timeout has passed without a leader starting it.
  ASSERT_TRUE(etcd_->Delete("/hvd/jobs/j/", true).ok());
  config_.start_timeout = 1s;
  auto ended = Standby(kSecret, state);
  ASSERT_FALSE(ended.ok());
  EXPECT_NE(ended.status().message().find(
                "has no settings in etcd at " + config_.rendezvous_endpoint +
                " within 1 s (--start-timeout): it ended, or its leader "
                "never started it"),
            std::string::npos)
      << ended.status().message();
  EXPECT_EQ(Keys("/hvd/jobs/j/"), std::vector<std::string>{});
}

// A standby started before its leader has claimed the job waits for the
// job to start instead of taking a lead there is nothing to lead with:
// the leader's claim succeeds, and the standby stands by for it.
TEST_F(EtcdStandbyTest, AStandbyStartedFirstWaitsForItsLeader) {
  std::string state;
  common::Result<std::unique_ptr<EtcdJob>> standby =
      common::Status::Internal("not yet");
  std::thread waiting([&] { standby = Standby(kSecret, state); });
  std::this_thread::sleep_for(700ms);  // the standby polls, unanswered
  auto leader = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  (*leader)->SaveState("the state");
  (*leader)->Run([](const LeadChange&) {});
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (Keys("/hvd/jobs/j/state").empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  CrashLeader();
  waiting.join();
  ASSERT_TRUE(standby.ok()) << standby.status().ToString();
  EXPECT_EQ(state, "the state");
}

// A leader whose etcd stops answering is no longer sure it leads once its
// lease could have expired, however long its thread stays in calls that
// time out one after another (writes waiting behind the renewal): its
// side effects stop before any standby can lead.
TEST_F(EtcdJobTest, AStalledEtcdEndsTheLeadBeforeTheLeaseCouldExpire) {
  config_.leader_lease = 3000ms;
  auto job = EtcdJob::Claim(config_, kSecret, 5000ms);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  (*job)->Run([](const LeadChange&) {});
  EXPECT_TRUE((*job)->leading());
  const auto stalled = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(member_.pid(), SIGSTOP), 0);
  for (int n = 0;
       std::chrono::steady_clock::now() < stalled + config_.leader_lease; ++n) {
    (*job)->SaveState("state " + std::to_string(n));
    (*job)->SaveDriverAddress("h:" + std::to_string(n));
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE((*job)->leading());
  EXPECT_FALSE((*job)->StatusJson()["leading"].get<bool>());
  ASSERT_EQ(kill(member_.pid(), SIGCONT), 0);
  (*job)->Finish();
}

TEST_F(EtcdJobTest, AnUnreachableEtcdIsSaidAtOnceNamingIt) {
  config_.rendezvous_endpoint =
      "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  auto job = EtcdJob::Claim(config_, kSecret, 30000ms);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(
      job.status().message().find("cannot reach etcd at " +
                                  config_.rendezvous_endpoint + " for job 'j'"),
      std::string::npos)
      << job.status().message();
}

}  // namespace
}  // namespace hvd::launcher
