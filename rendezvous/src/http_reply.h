// What the route files share: the route handlers and the pure parsers
// behind them (tests and fuzz targets call these directly; they never touch
// a socket).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/http_message.h"
#include "hvd/common/status.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/kv_store.h"
#include "hvd/rendezvous/report_board.h"

namespace hvd::rendezvous::internal {

// "/v1/kv/<scope>[/<key>]" after the "/v1/kv/" prefix, already
// percent-decoded.
struct KvPath {
  std::string scope;
  std::optional<std::string> key;  // nullopt: the path names a scope
};
common::Result<KvPath> ParseKvPath(std::string_view rest);

// The wait_ms parameter: absent is 0; otherwise 0..max.
common::Result<std::chrono::milliseconds> ParseWait(
    const common::HttpRequest& req, std::chrono::milliseconds max);

// "a,b,c" -> {"a", "b", "c"}; empty items stay (and are refused later).
std::vector<std::string> SplitKeys(const std::string& list);

// PUT, GET and DELETE under /v1/kv/ (the path must start with it). A
// request a worker signed must pass WorkerMayUseKv, `member_of(g)` saying
// whether it belongs to generation g (none: to no generation).
common::HttpAnswer HandleKv(
    const common::HttpRequest& req, KvStore& store,
    std::chrono::milliseconds max_wait,
    const std::function<bool(int64_t)>& member_of = nullptr);

// Whether HandleKv answers `req` at once: any /v1/kv/ request but a GET
// that asks to wait (wait_ms other than 0).
bool KvNeverBlocks(const common::HttpRequest& req);

// GET /v1/elastic/checkin. With `wrapped_key`, a worker's answer carries
// wrapped_key(worker, generation) as its generation_key.
using WrappedGenerationKey =
    std::function<std::string(const common::WorkerIdentity&, int64_t)>;
common::HttpAnswer HandleCheckIn(const common::HttpRequest& req,
                                 ElasticBoard& board,
                                 std::chrono::milliseconds max_wait,
                                 const WrappedGenerationKey& wrapped_key = {});

// POST /v1/elastic/report.
common::HttpAnswer HandleReport(const common::HttpRequest& req,
                                ReportBoard& reports);

}  // namespace hvd::rendezvous::internal
