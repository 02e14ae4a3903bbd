// The rendezvous HTTP protocol, shared by server and client: paths, query
// parameters, JSON field names and the rules for scope and key names.
// docs/protocol.md describes the same protocol for readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::rendezvous::protocol {

inline constexpr char kKvPath[] = "/v1/kv/";  // + scope [+ "/" + key]
inline constexpr char kStatusPath[] = "/v1/status";
// GET: check a slot in for the next generation (elastic mode).
inline constexpr char kCheckInPath[] = "/v1/elastic/checkin";
// POST: a worker's progress report (JSON body, worker_report.h).
inline constexpr char kReportPath[] = "/v1/elastic/report";

// Query parameters.
inline constexpr char kWaitMs[] = "wait_ms";  // long-poll budget
inline constexpr char kKeys[] = "keys";       // comma-separated key list
inline constexpr char kPrefix[] = "prefix";   // wait for keys by prefix ...
inline constexpr char kCount[] = "count";     // ... until this many exist
inline constexpr char kSlot[] = "slot";       // check-in: "<host>:<local rank>"
inline constexpr char kAfter[] = "after";     // check-in: last generation seen
inline constexpr char kNotify[] = "notify";   // check-in: "<addr>:<port>"
inline constexpr char kWorker[] = "worker";   // check-in: HVD_WORKER_ID

// Multi-key answer: {"values": {"<key>": "<base64 value>", ...}}.
inline constexpr char kValues[] = "values";

// Error answer: {"error": "<status code name>", "message": "..."}.
inline constexpr char kError[] = "error";
inline constexpr char kMessage[] = "message";

// The server takes a request line and headers of 16 KiB together
// (common::HttpServerLimits::header_bytes); clients split multi-key waits
// so that each target stays below this, leaving the signature headers
// room.
inline constexpr size_t kMaxTargetBytes = 7 * 1024;

// Scopes: 1-128 characters of [A-Za-z0-9._-].
bool IsValidScope(std::string_view scope);

// Keys: 1 or more characters of [A-Za-z0-9._~:/-] (URL-safe, no comma);
// the length limit is the server's (max_key_bytes).
bool IsValidKey(std::string_view key);

std::string KvTarget(std::string_view scope, std::string_view key);

// The scope of the workers' Gloo contexts and NCCL ids (in etcd: "gloo/"
// under the job's prefix). Each generation's keys start with
// GlooGenerationPrefix; a worker's own key may write only under the
// generations the worker belongs to (docs/security.md).
inline constexpr char kGlooScope[] = "gloo";
std::string GlooGenerationPrefix(int64_t generation);  // "g<generation>/"
// The generation a key of kGlooScope lives under, or nullopt when it
// starts with no GlooGenerationPrefix.
std::optional<int64_t> GlooKeyGeneration(std::string_view key);

}  // namespace hvd::rendezvous::protocol
