// Helpers the route files share: how a Status becomes an HTTP answer.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>

#include "hvd/common/status.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/kv_store.h"

namespace hvd::rendezvous::internal {

// 400 invalid argument, 401 unauthenticated, 404 not found, 408 timeout,
// 413 limit exceeded, 503 aborted (shutting down), 500 anything else.
int HttpStatusFor(common::Code code);

// Sets the status for `status` and the JSON error body.
void ReplyError(httplib::Response& res, const common::Status& status);

// Wraps a handler so that it runs only for correctly signed requests.
using Guard = std::function<httplib::Server::Handler(httplib::Server::Handler)>;

// Registers the /v1/elastic/... routes.
void AddElasticRoutes(httplib::Server& http, ElasticBoard& board,
                      std::chrono::milliseconds max_wait, const Guard& guard);

// Registers the /v1/kv/... routes.
void AddKvRoutes(httplib::Server& http, KvStore& store,
                 std::chrono::milliseconds max_wait, const Guard& guard);

}  // namespace hvd::rendezvous::internal
