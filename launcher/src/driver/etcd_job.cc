#include "driver/etcd_job.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <optional>

#include "driver/errands.h"
#include "hvd/common/build_info.h"
#include "hvd/common/hmac.h"
#include "hvd/common/logging.h"
#include "hvd/common/network_interfaces.h"
#include "hvd/rendezvous/etcd_seal.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::launcher {

using common::Result;
using common::Status;
using rendezvous::EtcdOp;
using Clock = std::chrono::steady_clock;

namespace {

std::string UtcTime(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

// The deadline of one etcd call: a third of the lease at most, so a leader
// blocked in a call still renews in time.
std::chrono::milliseconds CallDeadline(std::chrono::milliseconds lease) {
  return std::min(std::chrono::milliseconds(1500), lease / 3);
}

EtcdOp DeletePrefix(std::string key) {
  EtcdOp op;
  op.kind = EtcdOp::Kind::kDelete;
  op.key = std::move(key);
  op.prefix = true;
  return op;
}

}  // namespace

std::string LeaderIdentity(const std::string& host, int64_t pid,
                           int64_t started_ms) {
  // The machine's name is outside text: what is not UTF-8 is replaced,
  // never thrown.
  return nlohmann::json{
      {"host", host}, {"pid", pid}, {"started_ms", started_ms}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string DescribeLeader(const std::string& identity) {
  auto parsed = nlohmann::json::parse(identity, nullptr, false);
  if (!parsed.is_object() || !parsed["host"].is_string() ||
      !parsed["pid"].is_number_integer() ||
      !parsed["started_ms"].is_number_integer()) {
    return "'" + identity.substr(0, 200) + "'";
  }
  return "hvdrun pid " + std::to_string(parsed["pid"].get<int64_t>()) + " on " +
         parsed["host"].get<std::string>() + ", started " +
         UtcTime(parsed["started_ms"].get<int64_t>());
}

EtcdJob::EtcdJob(const LaunchConfig& config, rendezvous::EtcdOptions options,
                 std::string identity, common::JobSigningKey signer)
    : prefix_(EtcdJobPrefix(config.job_id)),
      etcd_(std::move(options)),
      leadership_(&etcd_, prefix_, identity,
                  LeadershipSettings{config.leader_lease,
                                     std::chrono::milliseconds(500)}),
      job_id_(config.job_id),
      endpoints_(config.rendezvous_endpoint),
      identity_(std::move(identity)),
      signer_(std::move(signer)),
      since_ms_(common::WallClockMs()) {}

EtcdOp EtcdJob::SignedPut(const std::string& name,
                          const std::string& value) const {
  EtcdOp op;
  op.kind = EtcdOp::Kind::kPut;
  op.key = prefix_ + name;
  op.value = rendezvous::SignEtcdValue(signer_, op.key, value);
  return op;
}

Result<std::unique_ptr<EtcdJob>> EtcdJob::Connect(const LaunchConfig& config,
                                                  const std::string& secret) {
  const std::string where = "etcd at " + config.rendezvous_endpoint;
  auto options =
      rendezvous::EtcdOptionsFromEnvironment(config.rendezvous_endpoint);
  if (!options.ok()) return options.status().WithContext(where);
  options->deadline = CallDeadline(config.leader_lease);
  options->connect_timeout =
      std::min(options->connect_timeout, options->deadline);
  auto signer = common::JobSigningKey::FromSecret(secret);
  if (!signer.ok()) return signer.status();
  std::unique_ptr<EtcdJob> job(new EtcdJob(
      config, *options,
      LeaderIdentity(common::ThisHostName(), getpid(), common::WallClockMs()),
      std::move(*signer)));
  // One read first: an etcd out of reach is said at once, naming every
  // member and why, instead of after the whole timeout.
  auto reachable = job->etcd_.Range(job->leadership_.leader_key());
  if (!reachable.ok()) {
    return reachable.status().WithContext(
        "cannot reach " + where + " for job '" + config.job_id +
        "' (check the members and --rendezvous-endpoint)");
  }
  return job;
}

Result<std::string> EtcdJob::ReadSigned(const std::string& name) {
  const std::string key = prefix_ + name;
  auto kvs = etcd_.Range(key);
  if (!kvs.ok()) return kvs.status();
  if (kvs->empty()) return Status::NotFound("no " + key + " in etcd");
  return rendezvous::OpenSignedEtcdValue(signer_.public_key(), key,
                                         (*kvs)[0].value);
}

Result<std::unique_ptr<EtcdJob>> EtcdJob::Standby(
    const LaunchConfig& config, const std::string& secret, int signals,
    std::string& state, int& signal, const StandbyWatch& watch) {
  const std::string where = "etcd at " + config.rendezvous_endpoint;
  const std::string job_name = "job '" + config.job_id + "'";
  auto connected = Connect(config, secret);
  if (!connected.ok()) return connected.status();
  std::unique_ptr<EtcdJob> job = std::move(*connected);
  auto stopped_by = [&](int wait_ms) -> std::optional<Status> {
    pollfd fd{signals, POLLIN, 0};
    if (poll(&fd, 1, std::max(0, wait_ms)) <= 0) return std::nullopt;
    signalfd_siginfo info;
    if (read(signals, &info, sizeof(info)) != sizeof(info) ||
        info.ssi_signo == SIGCHLD) {
      return std::nullopt;
    }
    signal = static_cast<int>(info.ssi_signo);
    job->leadership_.Resign();
    return Status::Aborted("the standby for " + job_name +
                           " stopped on signal " + std::to_string(signal));
  };
  // A standby started beside its leader must not win the lead of a job
  // that has not started: it campaigns only once the job's settings are in
  // etcd, waiting for them up to --start-timeout. One signed with another
  // secret is refused at once.
  const auto settings_by = Clock::now() + config.start_timeout;
  for (;;) {
    auto settings = job->ReadSigned("settings");
    if (settings.ok()) break;
    if (settings.status().code() == common::Code::kUnauthenticated) {
      return Status::Unauthenticated(
          job_name + "'s keys in " + where +
          " are signed with another secret than --job-secret-file's: give "
          "the standby the file its leader was started with");
    }
    if (Clock::now() >= settings_by) {
      if (settings.status().code() != common::Code::kNotFound) {
        return settings.status().WithContext("reading " + job_name);
      }
      return Status::NotFound(
          job_name + " has no settings in " + where + " within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                             config.start_timeout)
                             .count()) +
          " s (--start-timeout): it ended, or its leader never started it; "
          "there is nothing to take over");
    }
    if (auto stopped = stopped_by(250)) return *stopped;
  }
  std::string told;
  int64_t detected_ms = 0;  // when the leader key was first seen gone
  StandbyView view;
  view.job_id = config.job_id;
  view.etcd = config.rendezvous_endpoint;
  view.this_hvdrun = DescribeLeader(job->identity_);
  view.pid = getpid();
  view.host = common::ThisHostName();
  view.since_ms = common::WallClockMs();
  if (watch) watch(view);
  std::string seen = "-";  // the holder `view` describes
  // The leader publishes its status page once it has started it: until
  // then (or for good, from an older hvdrun) look again every second.
  constexpr std::chrono::milliseconds kPageRead{1000};
  Clock::time_point next_page_read = Clock::now();
  for (;;) {
    job->leadership_.Poll();
    const LeadershipPolicy& policy = job->leadership_.policy();
    if (policy.holder().empty() && detected_ms == 0) {
      detected_ms = common::WallClockMs();
    }
    if (policy.role() == LeaderRole::kLeader) break;
    if (!policy.holder().empty() && policy.holder() != told) {
      told = policy.holder();
      common::Announce("hvdrun: standby for " + job_name + " in " + where +
                       ", led by " + DescribeLeader(told));
    }
    bool changed = false;
    if (policy.holder() != seen) {
      seen = policy.holder();
      view.leader = seen.empty() ? "" : DescribeLeader(seen);
      view.leader_since_ms = common::WallClockMs();
      view.page.reset();
      view.page_error.clear();
      next_page_read = Clock::now();
      changed = true;
    }
    const bool page_wanted = !seen.empty() && !view.page;
    if (page_wanted && Clock::now() >= next_page_read) {
      next_page_read = Clock::now() + kPageRead;
      std::string error;
      auto text = job->ReadSigned("status");
      if (text.ok()) {
        auto page = ParseLeaderPage(*text);
        if (!page.ok()) {
          error = page.status().message();
        } else if (page->leader == seen) {
          view.page = *page;
          view.leader_since_ms = page->since_ms;
          changed = true;
        }  // else the last leader's: this one has not published yet
      } else if (text.status().code() != common::Code::kNotFound) {
        error = text.status().message();
      }
      if (error != view.page_error) {
        view.page_error = error;
        changed = true;
      }
    }
    if (changed && watch) watch(view);
    auto until = job->leadership_.NextDeadline();
    if (!seen.empty() && !view.page) until = std::min(until, next_page_read);
    const auto wait =
        std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
    if (auto stopped = stopped_by(
            static_cast<int>(std::min<int64_t>(wait.count(), 3600 * 1000)))) {
      return *stopped;
    }
  }
  if (watch) {
    view.leader = view.this_hvdrun;
    view.leader_since_ms = common::WallClockMs();
    view.page.reset();
    view.page_error.clear();
    view.taking_over = true;
    watch(view);
  }
  common::Announce("hvdrun: leads " + job_name + " in " + where +
                   " now; taking it over");
  const int64_t elected_ms = common::WallClockMs();
  {
    // It leads since now, not since it began to stand by.
    std::lock_guard<std::mutex> lock(job->mu_);
    job->since_ms_ = elected_ms;
  }
  // The lead is ours; what the last leader left decides what follows. A
  // job that ended deleted its keys, settings first.
  auto fail = [&](Status status) {
    job->leadership_.Resign();
    return status;
  };
  auto settings = job->ReadSigned("settings");
  if (!settings.ok()) {
    if (settings.status().code() == common::Code::kNotFound) {
      return fail(Status::NotFound(
          job_name + " has no settings in " + where +
          ": it ended (or never started); there is nothing to take over"));
    }
    if (settings.status().code() == common::Code::kUnauthenticated) {
      return fail(Status::Unauthenticated(
          job_name + "'s keys in " + where +
          " are signed with another secret than --job-secret-file's: give "
          "the standby the file its leader was started with"));
    }
    return fail(settings.status().WithContext("reading " + job_name));
  }
  auto parsed = nlohmann::json::parse(*settings, nullptr, false);
  const nlohmann::json command = config.command;
  if (!parsed.is_object() ||
      parsed.value("command", nlohmann::json()) != command) {
    return fail(Status::InvalidArgument(
        job_name + " runs another command than this standby's (" +
        parsed.value("command", nlohmann::json()).dump() +
        "): a standby takes the same command line as the job"));
  }
  // The hvdrun that started the job, unless this one saw another lead.
  if (told.empty() && parsed.contains("leader") &&
      parsed["leader"].is_string()) {
    told = parsed["leader"].get<std::string>();
  }
  job->TakeoverPhase({{"from", told.empty() ? "" : DescribeLeader(told)},
                      {"detected_ms", detected_ms},
                      {"elected_ms", elected_ms}});
  auto kept = job->ReadSigned("state");
  if (!kept.ok()) {
    return fail(kept.status().WithContext(
        job_name + "'s last leader left no driver state in " + where +
        ", so its workers cannot be found"));
  }
  state = std::move(*kept);
  // The next standby's `from` is this hvdrun.
  parsed["leader"] = job->identity_;
  auto written =
      job->leadership_.FencedWrite({job->SignedPut("settings", parsed.dump())});
  if (!written.ok()) {
    return fail(written.status().WithContext("taking " + job_name + " over"));
  }
  return job;
}

Result<std::unique_ptr<EtcdJob>> EtcdJob::Claim(
    const LaunchConfig& config, const std::string& secret,
    std::chrono::milliseconds timeout) {
  const std::string where = "etcd at " + config.rendezvous_endpoint;
  auto connected = Connect(config, secret);
  if (!connected.ok()) return connected.status();
  std::unique_ptr<EtcdJob> job = std::move(*connected);
  const std::string job_name = "job '" + config.job_id + "'";
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    job->leadership_.Poll();
    const LeadershipPolicy& policy = job->leadership_.policy();
    if (policy.role() == LeaderRole::kLeader) break;
    if (!policy.holder().empty()) {
      return Status::Aborted(
          job_name + " already has a leader in " + where + ": " +
          DescribeLeader(policy.holder()) +
          ". Give this job another --job-id; if that hvdrun is gone, its "
          "lead ends when its lease does (its --leader-lease-seconds, " +
          std::to_string(kDefaultLeaderLease.count()) + " s by default)");
    }
    if (Clock::now() >= deadline) {
      return Status::Timeout("could not take the lead of " + job_name + " in " +
                             where + " within " +
                             std::to_string(timeout.count() / 1000) +
                             " s (etcd answered reads but not the lease "
                             "or the campaign)");
    }
    std::this_thread::sleep_until(
        std::min<Clock::time_point>(job->leadership_.NextDeadline(), deadline));
  }
  // A job that starts under an id takes its prefix over: the Gloo keys a
  // finished or crashed run left there are sealed with other keys.
  // So is a crashed run's driver state, which a standby must not take
  // for this run's.
  nlohmann::json command = config.command;
  const EtcdOp settings = job->SignedPut(
      "settings",
      nlohmann::json{{"version", common::GetBuildInfo().version},
                     {"command", command},
                     {"num_proc", config.num_proc},
                     {"min_np", config.min_np},
                     {"max_np", config.max_np},
                     {"elastic", config.elastic},
                     {"leader", job->identity_}}
          // The command is the user's bytes: not always UTF-8.
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  EtcdOp no_state;
  no_state.kind = EtcdOp::Kind::kDelete;
  no_state.key = job->prefix_ + "state";
  auto written = job->leadership_.FencedWrite(
      {DeletePrefix(job->prefix_ + "gloo/"), no_state, settings});
  if (!written.ok()) {
    return written.status().WithContext("writing " + job_name + " to " + where);
  }
  return job;
}

EtcdJob::~EtcdJob() { Finish(); }

void EtcdJob::Run(std::function<void(const LeadChange&)> on_change) {
  on_change_ = std::move(on_change);
  {
    std::lock_guard<std::mutex> lock(mu_);
    sure_until_ = leadership_.policy().sure_until();
  }
  thread_ = std::thread([this] {
    // Never std::terminate: the driver hears it as a lead it can no longer
    // be sure of, and holds its side effects back.
    common::Status ended =
        RunCatching("hvdrun's etcd thread", [this] { Loop(); });
    if (!ended.ok()) {
      spdlog::error("hvdrun: {}", ended.message());
      Tell({false, ended.message(), ""});
    }
  });
}

void EtcdJob::GenerationPublished(int64_t generation) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    published_ = std::max(published_, generation);
  }
  wake_.notify_one();
}

void EtcdJob::SaveDriverAddress(const std::string& address) {
  SaveValue("driver", address);
}

void EtcdJob::SaveStatusPage(LeaderPage page) {
  page.leader = identity_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    page.since_ms = since_ms_;
  }
  SaveValue("status", EncodeLeaderPage(page));
}

void EtcdJob::SaveValue(const std::string& name, std::string value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    values_[name] = std::move(value);
  }
  wake_.notify_one();
}

bool EtcdJob::ValuesPending(
    const std::map<std::string, std::string>& taken) const {
  for (const auto& [name, value] : values_) {
    auto written = values_written_.find(name);
    auto was = taken.find(name);
    if ((written == values_written_.end() || written->second != value) &&
        (was == taken.end() || was->second != value)) {
      return true;
    }
  }
  return false;
}

void EtcdJob::SaveState(std::string state) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = std::move(state);
  }
  wake_.notify_one();
}

void EtcdJob::Write(const std::vector<EtcdOp>& ops, const char* what) {
  auto written = leadership_.FencedWrite(ops);
  if (!written.ok()) {
    spdlog::warn("hvdrun: {} in etcd: {}", what, written.status().message());
  }
}

void EtcdJob::Loop() {
  // leading_ is written only on this thread (Tell, under mu_, for
  // StatusJson's readers), so this thread reads it without the lock.
  std::string told_holder;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const int64_t keep_from = FirstGlooGenerationKept(published_);
    const std::string state = state_;
    const std::map<std::string, std::string> values = values_;
    // Calls blocked past the lease's sure end: the driver has seen
    // leading() false meanwhile, and held its side effects back.
    const bool lapsed =
        leading_ && std::chrono::steady_clock::now() >= sure_until_;
    lock.unlock();
    const auto notices = leadership_.Poll();
    const LeadershipPolicy& policy = leadership_.policy();
    {
      std::lock_guard<std::mutex> sure(mu_);
      sure_until_ = policy.sure_until();
    }
    for (const LeaderAction& notice : notices) {
      if (notice.kind == LeaderAction::Kind::kStepDown) {
        Tell({false, notice.reason, ""});
      } else if (notice.kind == LeaderAction::Kind::kLead && !leading_) {
        told_holder.clear();
        Tell({true, "", ""});
      }
    }
    // A renewal answered late, in time: sure again, so the driver carries
    // out what it held back.
    if (lapsed && leading_) on_change_({true, "", ""});
    // A key of its own that it could not take back yet is no other leader.
    if (!leading_ && !policy.holder().empty() && policy.holder() != identity_ &&
        policy.holder() != told_holder) {
      told_holder = policy.holder();
      Tell({false, "another hvdrun leads the job now",
            DescribeLeader(told_holder)});
    }
    if (leading_ && keep_from > forgotten_) {
      // etcd takes at most 128 operations in one transaction.
      std::vector<EtcdOp> deletes;
      const int64_t until = std::min(keep_from, forgotten_ + 100);
      for (int64_t g = forgotten_; g < until; ++g) {
        deletes.push_back(
            DeletePrefix(prefix_ + rendezvous::protocol::kGlooScope + "/" +
                         rendezvous::protocol::GlooGenerationPrefix(g)));
      }
      if (leadership_.FencedWrite(deletes).ok()) forgotten_ = until;
    }
    // state_written_ and values_written_ are this thread's alone too.
    if (leading_ && state != state_written_) {
      if (leadership_.FencedWrite({SignedPut("state", state)}).ok()) {
        state_written_ = state;
      }
    }
    for (const auto& [name, value] : values) {
      auto written = values_written_.find(name);
      if (!leading_ ||
          (written != values_written_.end() && written->second == value)) {
        continue;
      }
      if (leadership_.FencedWrite({SignedPut(name, value)}).ok()) {
        values_written_[name] = value;
      }
    }
    lock.lock();
    wake_.wait_until(lock, leadership_.NextDeadline(), [&] {
      const int64_t kept = FirstGlooGenerationKept(published_);
      return stop_ ||
             (leading_ && ((kept > forgotten_ && kept != keep_from) ||
                           (state_ != state_written_ && state_ != state) ||
                           ValuesPending(values)));
    });
  }
}

void EtcdJob::Tell(const LeadChange& change) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = common::WallClockMs();
    if (change.leading != leading_) since_ms_ = now;
    leading_ = change.leading;
    nlohmann::json entry = {{"time_ms", now}, {"leading", change.leading}};
    if (!change.reason.empty()) entry["reason"] = change.reason;
    if (!change.holder.empty()) entry["leader"] = change.holder;
    changes_.push_back(std::move(entry));
    if (changes_.size() > 20) changes_.erase(changes_.begin());
  }
  on_change_(change);
}

bool EtcdJob::leading() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leading_ && std::chrono::steady_clock::now() < sure_until_;
}

nlohmann::json EtcdJob::StatusJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json status = {
      {"job_id", job_id_},
      {"etcd", endpoints_},
      {"prefix", prefix_},
      {"this_hvdrun", DescribeLeader(identity_)},
      {"leading", leading_ && std::chrono::steady_clock::now() < sure_until_},
      {"since_ms", since_ms_},
      {"changes", changes_}};
  if (!takeover_.is_null()) status["takeover"] = takeover_;
  return status;
}

void EtcdJob::TakeoverPhase(const nlohmann::json& fields) {
  std::lock_guard<std::mutex> lock(mu_);
  if (takeover_.is_null()) takeover_ = nlohmann::json::object();
  takeover_.update(fields);
}

void EtcdJob::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  // A standby that gave the lead back (its takeover failed) leaves the
  // job's keys: they were never its to delete.
  if (leadership_.policy().role() == LeaderRole::kLeader &&
      !leadership_.resigned()) {
    Write({DeletePrefix(prefix_)}, "deleting the job's keys");
  }
  leadership_.Resign();
}

}  // namespace hvd::launcher
