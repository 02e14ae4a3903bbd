// EtcdJob: the job's side in etcd under --rendezvous-backend etcd. This
// hvdrun claims the lead of the job (leader/, a lease), writes the job's
// settings, keeps the driver's state there (policy/driver_state.h), drops
// old generations' Gloo keys and, when the job ends, every key of the job.
// What it writes is signed with the job's signing key (SignEtcdValue), which
// every hvdrun of the job derives from the secret; workers can check it.
//
// Every etcd call runs on EtcdJob's own thread, which also keeps the lease
// alive, so a slow or unreachable etcd never stalls the driver's loop;
// writes are fenced (EtcdLeadership::FencedWrite) and each is safe to
// apply late: deletes of a past generation's keys and of the whole job,
// and the newest driver state (a state the driver replaced before it was
// written is never written: one transaction carries the newest).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "hvd/common/job_signing_key.h"
#include "hvd/common/status.h"
#include "hvd/rendezvous/etcd_client.h"
#include "job/launch_config.h"
#include "leader/etcd_leadership.h"
#include "status/standby_status.h"

namespace hvd::launcher {

// A change of this hvdrun's lead, reported from EtcdJob's thread: lost
// (`leading` false, `reason` says why, `holder` names the hvdrun that
// leads now when one does) or taken again.
struct LeadChange {
  bool leading = false;
  std::string reason;
  std::string holder;
};

class EtcdJob {
 public:
  // Reaches etcd and takes the lead of `config.job_id` within `timeout`.
  // Fails, saying what to do, when etcd cannot be reached, when another
  // hvdrun leads a job of that id, or when the lead is not won in time.
  static common::Result<std::unique_ptr<EtcdJob>> Claim(
      const LaunchConfig& config, const std::string& secret,
      std::chrono::milliseconds timeout);

  // What a standby knows while it stands by, each time that changes:
  // who leads, since when, and where the leader's status page is
  // (<prefix>status). Called on Standby's thread.
  using StandbyWatch = std::function<void(const StandbyView&)>;

  // --standby: waits until this hvdrun leads `config.job_id`, however
  // long, then reads what the last leader left: the job's settings (their
  // seal proves the secret is the job's; their command must be this
  // hvdrun's) and the driver's state, returned in `state` (EncodeDriverState's
  // text). A signal on `signals` (a signalfd) ends the wait: kAborted, with
  // the signal in `signal`. Fails, saying why, when etcd cannot be reached,
  // when the job has ended (no settings: nothing to take over) or left no
  // state, or when the secret or the command differ. `watch`, when given,
  // hears what the standby sees (for its status server).
  static common::Result<std::unique_ptr<EtcdJob>> Standby(
      const LaunchConfig& config, const std::string& secret, int signals,
      std::string& state, int& signal, const StandbyWatch& watch = {});
  ~EtcdJob();
  EtcdJob(const EtcdJob&) = delete;
  EtcdJob& operator=(const EtcdJob&) = delete;

  // Keeps the lead from now on, on EtcdJob's thread; `on_change` is called
  // there.
  void Run(std::function<void(const LeadChange&)> on_change);
  // Generation `generation` is published: the Gloo keys of every
  // generation before the one before it go (a worker of the previous
  // generation may still be leaving it).
  void GenerationPublished(int64_t generation);
  // The driver's state is `state` now (EncodeDriverState's): written to
  // <prefix>state as soon as this thread can.
  void SaveState(std::string state);
  // This hvdrun's rendezvous server is at `address` ("host:port"): written
  // to <prefix>driver, where workers look for it when the server they
  // knew stops answering (a new leader's).
  void SaveDriverAddress(const std::string& address);
  // This hvdrun's status page is `page` (its kind, URL and host): written
  // to <prefix>status with this hvdrun's identity and the time it took
  // the lead, for standbys to send readers there (standby_status.h).
  void SaveStatusPage(LeaderPage page);
  // The job is over: deletes its keys, gives up the lead and stops the
  // thread, within the client's deadline.
  void Finish();

  const std::string& prefix() const { return prefix_; }
  // Whether this hvdrun is sure it leads now: it leads, and the lease it
  // last renewed cannot have expired yet, even while this thread is
  // blocked on an unreachable etcd and has not stepped down yet.
  // Thread-safe.
  bool leading() const;
  // The status page's account (`leader` of status.json): the job id, etcd,
  // this hvdrun, whether it leads now and since when (wall-clock ms), its
  // last 20 changes of lead and, in an hvdrun that took the job over, the
  // takeover's phases. Thread-safe.
  nlohmann::json StatusJson() const;
  // A phase of this hvdrun's takeover ("rebuilt_ms", "adopted_ms", ...)
  // and what came with it, for StatusJson's `takeover`. Thread-safe.
  void TakeoverPhase(const nlohmann::json& fields);

 private:
  // Keeps `change` for StatusJson and hands it on.
  void Tell(const LeadChange& change);
  EtcdJob(const LaunchConfig& config, rendezvous::EtcdOptions options,
          std::string identity, common::JobSigningKey signer);
  // Options from the environment, and the job, ready to campaign; fails
  // when etcd cannot be reached.
  static common::Result<std::unique_ptr<EtcdJob>> Connect(
      const LaunchConfig& config, const std::string& secret);
  // The value of <prefix><name>, its signature checked; kNotFound when
  // there is none.
  common::Result<std::string> ReadSigned(const std::string& name);
  // A put of `value` under <prefix><name>, signed.
  rendezvous::EtcdOp SignedPut(const std::string& name,
                               const std::string& value) const;
  void Loop();
  // Keeps `value` for <prefix><name>, written by Loop.
  void SaveValue(const std::string& name, std::string value);
  // Whether a kept value changed since Loop took `taken` and etcd does not
  // hold it yet. Loop's thread only, under mu_.
  bool ValuesPending(const std::map<std::string, std::string>& taken) const;
  void Write(const std::vector<rendezvous::EtcdOp>& ops, const char* what);

  const std::string prefix_;
  rendezvous::EtcdClient etcd_;
  EtcdLeadership leadership_;
  std::function<void(const LeadChange&)> on_change_;

  const std::string job_id_;
  const std::string endpoints_;
  const std::string identity_;
  const common::JobSigningKey signer_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool leading_ = true;
  // Until when the lease this hvdrun last renewed surely lives
  // (LeadershipPolicy::sure_until), as of this thread's last Poll.
  std::chrono::steady_clock::time_point sure_until_{};
  int64_t since_ms_ = 0;
  nlohmann::json changes_ = nlohmann::json::array();  // the last 20
  nlohmann::json takeover_;  // null: this hvdrun started the job
  bool stop_ = false;
  int64_t published_ = -1;     // the newest generation published
  int64_t forgotten_ = 0;      // generations below it have no keys left
  std::string state_;          // the newest driver state
  std::string state_written_;  // the one etcd holds
  // The newest value of each key Loop keeps whole (driver, status) and
  // what etcd holds (Loop's thread only).
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> values_written_;
  std::thread thread_;
};

// What an hvdrun writes as its identity in the leader key, and a reader's
// account of one ("hvdrun pid 42 on node3, started 2026-11-28 05:03:13
// UTC").
std::string LeaderIdentity(const std::string& host, int64_t pid,
                           int64_t started_ms);
std::string DescribeLeader(const std::string& identity);

}  // namespace hvd::launcher
