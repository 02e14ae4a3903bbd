// The /v1/elastic/... routes: a worker checks its slot in for the next
// generation (docs/protocol.md).
#include <nlohmann/json.hpp>

#include "http_reply.h"
#include "hvd/common/env.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::rendezvous::internal {

using common::Status;

void AddElasticRoutes(httplib::Server& http, ElasticBoard& board,
                      std::chrono::milliseconds max_wait, const Guard& guard) {
  http.Get(
      protocol::kCheckInPath,
      guard([&board, max_wait](const httplib::Request& req,
                               httplib::Response& res) {
        const std::string slot = req.get_param_value(protocol::kSlot);
        if (slot.empty() || slot.size() > 512) {
          return ReplyError(
              res, Status::InvalidArgument("check-in needs slot=<host>:<local "
                                           "rank>"));
        }
        auto after = common::ParseInt(req.get_param_value(protocol::kAfter),
                                      protocol::kAfter, 0, INT64_MAX);
        if (!after.ok()) return ReplyError(res, after.status());
        auto wait = common::ParseInt(req.get_param_value(protocol::kWaitMs),
                                     protocol::kWaitMs, 0, max_wait.count());
        if (!wait.ok()) return ReplyError(res, wait.status());
        auto assignment =
            board.CheckIn(slot, *after, req.get_param_value(protocol::kNotify),
                          std::chrono::milliseconds(*wait));
        if (!assignment.ok()) return ReplyError(res, assignment.status());
        res.status = 200;
        res.set_content(EncodeAssignment(*assignment), "application/json");
      }));
}

}  // namespace hvd::rendezvous::internal
