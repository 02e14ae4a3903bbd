// A standby's status server (hvdrun --standby, before it leads): what it
// answers, and what the leading hvdrun publishes in etcd so that a standby
// can send a reader on to the leader's page (docs/status.md, "A standby").
//
// The leader keeps its status page's place under <prefix>status, sealed
// like <prefix>driver: the URL base other machines can read it at, or why
// there is none (its server listens on loopback only, or it runs without
// one). A standby answers `/` and `/status.json` with a redirect there
// (307, the same path and query, so the reader's ?token= goes along), and
// otherwise with its own small account that says why it cannot; `/metrics`
// is always its own (a Prometheus target stays the machine it names).
//
// Pure functions of what the caller knows: no clock, socket or etcd.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "hvd/common/status.h"

namespace hvd::launcher {

// The leader's status page as it publishes it.
struct LeaderPage {
  enum class Kind {
    kUrl,           // readable from other machines at `url`
    kLoopbackOnly,  // bound to loopback: `url` works on `host` alone
    kOff,           // --status-bind none
  };
  Kind kind = Kind::kOff;
  std::string url;   // "http://HOST:PORT", no path, no token
  std::string host;  // the leader's machine
  // The publisher's identity (the leader key's value, LeaderIdentity), so
  // that a standby never takes a page a deposed leader left for the page
  // of the one that leads now.
  std::string leader;
  int64_t since_ms = 0;  // when it took the lead (wall clock)
};

// The text kept (sealed) under <prefix>status, and the one parser of it:
// kInvalidArgument, saying what is wrong, for anything else.
std::string EncodeLeaderPage(const LeaderPage& page);
common::Result<LeaderPage> ParseLeaderPage(std::string_view text);

// Whether a status server bound to `bind_host` can be read only from its
// own machine: 127.0.0.0/8, ::1, localhost.
bool IsLoopbackHost(std::string_view bind_host);

// What a leader publishes for its status server bound to `bind_host` at
// `url` (StatusServer::base_url) on machine `host`; `leader` and `since_ms`
// are the caller's to fill.
LeaderPage PageToPublish(const std::string& bind_host, const std::string& url,
                         const std::string& host);

// What a standby knows of its job, as EtcdJob::Standby tells it.
struct StandbyView {
  std::string job_id;
  std::string etcd;         // --rendezvous-endpoint
  std::string this_hvdrun;  // "hvdrun pid P on H, started T"
  int64_t pid = 0;
  std::string host;
  int64_t since_ms = 0;  // standing by since
  // The hvdrun that leads, described as the standby prints it; empty when
  // none leads (its lease ended, and no one has won the next yet).
  std::string leader;
  // Since when `leader` leads: as it published, or else when this standby
  // first saw it lead.
  int64_t leader_since_ms = 0;
  // What `leader` published; nullopt until it has (or when it never does).
  std::optional<LeaderPage> page;
  // Why what is under <prefix>status could not be taken, when it could not.
  std::string page_error;
  // This standby has won the lead and is taking the job over.
  bool taking_over = false;
};

// Where a standby sends a reader of `path` (already decoded: "/",
// "/index.html" or "/status.json") whose request target was `target` (as
// sent): the leader's URL base, the path, and the target's query; nullopt
// when it cannot (NoRedirectReason says why) or for another path. Bytes of
// the query outside printable ASCII are percent-encoded, so the Location
// header is always well-formed.
std::optional<std::string> RedirectLocation(const StandbyView& view,
                                            std::string_view path,
                                            std::string_view target);

// Why a standby sends readers nowhere; "" when it does redirect.
std::string NoRedirectReason(const StandbyView& view);

// A standby's status.json: {"job": {"state": "standby", "now_ms"},
// "standby": {...}} (docs/status.md, "A standby"), also the body of its
// redirects.
nlohmann::json StandbyJson(const StandbyView& view, int64_t now_ms);

// Its page at `/` when it does not redirect: the same facts, and a reload
// every few seconds, which redirects once the leader's page is known.
std::string StandbyPageHtml(const StandbyView& view, int64_t now_ms);

// Its /metrics: hvd_standby 1 and hvd_standby_leader_known.
std::string StandbyMetricsText(const StandbyView& view);

// A standby's status.json (or a followed one's `standby` member) as
// `hvdrun status` prints it: "standby hvdrun pid P on H for job 'J' ...;
// the job is led by ...".
std::string StandbyText(const nlohmann::json& standby, double now_ms);

}  // namespace hvd::launcher
