// JobPolicy's host-check rules (job_policy.h, "The host check"): which
// hosts to check, what an answer or a missed deadline means, and what may
// start once the checks are in.
#include <algorithm>

#include "hvd/common/logging.h"
#include "policy/host_check.h"
#include "policy/job_policy.h"

namespace hvd::launcher {

void JobPolicy::OnHostChecked(TimePoint now, const HostChecked& event,
                              Actions& out) {
  auto it = checks_.find(event.host);
  // Late: its deadline passed, or the job is over.
  if (it == checks_.end() || it->second.state != HostCheckState::kPending ||
      stopping_) {
    return;
  }
  std::optional<std::string> problem;
  if (!event.ok) {
    problem = event.message;
  } else {
    problem =
        MissingInterfaces(event.host, config_.network_interfaces,
                          event.interfaces, config_.loopback_interfaces_count);
  }
  // What lets the host in is what made it be checked.
  const char* why = it->second.returning ? "a blacklisted host's cooldown ended"
                                         : "hosts changed";
  if (problem) {
    FailHostCheck(now, event.host, *problem, out);  // erases the check
  } else {
    it->second.state = HostCheckState::kPassed;
    --checks_running_;
  }
  StartQueuedChecks(now, out);
  AfterChecks(now, why, out);
}

void JobPolicy::RequestChecks(TimePoint now, Actions& out) {
  if (!config_.check_hosts || !config_.elastic || stopping_) return;
  for (const HostSlots& host : table_.Usable(now)) {
    if (checks_.count(host.host)) continue;
    checks_[host.host].returning = table_.TimesBlacklisted(host.host) > 0;
    QueueCheck(now, host.host, out);
  }
}

void JobPolicy::QueueCheck(TimePoint now, const std::string& host,
                           Actions& out) {
  checks_[host].state = HostCheckState::kQueued;
  check_queue_.push_back(host);
  StartQueuedChecks(now, out);
}

void JobPolicy::StartQueuedChecks(TimePoint now, Actions& out) {
  while (checks_running_ < kHostChecksAtOnce && !check_queue_.empty()) {
    const std::string host = std::move(check_queue_.front());
    check_queue_.pop_front();
    auto it = checks_.find(host);
    if (it == checks_.end() || it->second.state != HostCheckState::kQueued) {
      continue;  // dropped (blacklisted) while it waited
    }
    it->second.state = HostCheckState::kPending;
    it->second.started = now;
    ++checks_running_;
    out.push_back(CheckHost{host});
  }
}

void JobPolicy::DropCheck(const std::string& host) {
  auto it = checks_.find(host);
  if (it == checks_.end()) return;
  if (it->second.state == HostCheckState::kPending) --checks_running_;
  checks_.erase(it);
}

void JobPolicy::FailHostCheck(TimePoint now, const std::string& host,
                              const std::string& problem, Actions& out) {
  if (!config_.elastic) {
    if (checks_[host].state == HostCheckState::kPending) --checks_running_;
    checks_[host].state = HostCheckState::kFailed;
    failed_checks_.push_back(host);
    out.push_back(Say{problem});
    return;
  }
  // As a failed worker's host: blacklisted, with the cooldown rules, and
  // checked again if it comes back.
  table_.Blacklist(host, now);
  DropCheck(host);
  failures_.push_back({0, "host " + host + " failed its check: " + problem});
  out.push_back(Say{problem + "; host " + host + " blacklisted"});
}

void JobPolicy::AfterChecks(TimePoint now, const std::string& why,
                            Actions& out) {
  // The static job and the first generation wait for every check.
  if (stopping_ ||
      (AnyCheckPending() && (awaiting_checks_ || start_pending_))) {
    return;
  }
  if (awaiting_checks_) {
    std::vector<SlotAssignment> slots = std::move(*awaiting_checks_);
    awaiting_checks_.reset();
    if (!failed_checks_.empty()) {
      size_t hosts = checks_.size();
      Stop(now,
           std::to_string(failed_checks_.size()) + " of " +
               std::to_string(hosts) +
               " hosts failed the check before launch; no worker was started",
           1, out);
      return;
    }
    for (const SlotAssignment& slot : slots) StartSlot(now, slot, 0, out);
    return;
  }
  if (!config_.elastic) return;
  if (start_pending_) {
    start_pending_ = false;
    Reassign(now, "start", false, out);
  } else if (waiting_since_ || MembershipChanged(now)) {
    // A host discovery added, or one back from its cooldown, joins here
    // once checked.
    Reassign(now, why, false, out);
  }
}

bool JobPolicy::HostReady(const std::string& host) const {
  if (!config_.check_hosts) return true;
  auto it = checks_.find(host);
  return it != checks_.end() && it->second.state == HostCheckState::kPassed;
}

bool JobPolicy::AnyCheckPending() const {
  return std::any_of(checks_.begin(), checks_.end(), [](const auto& entry) {
    return entry.second.state == HostCheckState::kPending ||
           entry.second.state == HostCheckState::kQueued;
  });
}

TimePoint JobPolicy::CheckDeadline(TimePoint started) const {
  return started + config_.start_timeout + config_.host_check_grace;
}

void JobPolicy::FailUnansweredChecks(TimePoint now, Actions& out) {
  std::vector<std::string> unanswered;
  for (const auto& [host, check] : checks_) {
    if (check.state == HostCheckState::kPending &&
        now >= CheckDeadline(check.started)) {
      unanswered.push_back(host);
    }
  }
  for (const std::string& host : unanswered) {
    FailHostCheck(now, host,
                  "the check of host " + host + " did not answer within " +
                      common::DecimalSeconds(config_.start_timeout +
                                             config_.host_check_grace) +
                      " s",
                  out);
  }
  if (!unanswered.empty()) {
    StartQueuedChecks(now, out);
    AfterChecks(now, "hosts changed", out);
  }
}

}  // namespace hvd::launcher
