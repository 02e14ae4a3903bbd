// A real RendezvousServer for tests/integration/test_worker_reports.py,
// driven line by line on stdin, standing in for the driver side of worker
// reports until hvdrun's driver admits slots itself. The job secret comes
// from HVD_SECRET_KEY (never a command line). It prints "PORT <port>", then
// answers each command with one line:
//
//   admit <slot>=<worker id> ...      -> OK         (ReportBoard::Admit)
//   publish <generation> <sync 0|1> <slot>=<worker id> ...
//                                     -> OK | ERROR <message>
//        a generation of these slots, ranked in the order given (slots are
//        "<host>:<local rank>"), on the ElasticBoard
//   notify <generation>               -> OK | ERROR <message>
//        HostsUpdated{generation} to every registered notification address,
//        signed with the key of the worker last admitted for its slot
//   reports                           -> REPORTS <json>
//        {slot: report JSON + "received_count"} (ReportBoard::Latest)
//
// It ends at the end of its input.
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/logging.h"
#include "hvd/common/worker_key.h"
#include "hvd/notify/client.h"
#include "hvd/rendezvous/server.h"
#include "hvd/rendezvous/worker_assignment.h"
#include "hvd/rendezvous/worker_report.h"

namespace {

using hvd::common::Status;
namespace rdv = hvd::rendezvous;

// "<slot>=<worker id>" words -> pairs in order.
std::vector<std::pair<std::string, int64_t>> SlotWorkers(
    std::istringstream& words) {
  std::vector<std::pair<std::string, int64_t>> slots;
  std::string word;
  while (words >> word) {
    const size_t eq = word.rfind('=');
    slots.emplace_back(word.substr(0, eq),
                       std::strtoll(word.c_str() + eq + 1, nullptr, 10));
  }
  return slots;
}

Status Publish(rdv::RendezvousServer& server, std::istringstream& words) {
  int64_t generation = 0;
  int sync = 1;
  words >> generation >> sync;
  auto slots = SlotWorkers(words);
  std::vector<std::string> hosts;
  std::map<std::string, int> local_size;
  for (const auto& [slot, worker] : slots) {
    const std::string host = slot.substr(0, slot.rfind(':'));
    if (local_size[host]++ == 0) hosts.push_back(host);
  }
  rdv::GenerationPlan plan;
  plan.generation = generation;
  for (size_t rank = 0; rank < slots.size(); ++rank) {
    const auto& [slot, worker] = slots[rank];
    const std::string host = slot.substr(0, slot.rfind(':'));
    rdv::WorkerAssignment a;
    a.generation = generation;
    a.layout.rank = static_cast<int>(rank);
    a.layout.size = static_cast<int>(slots.size());
    a.layout.local_rank = std::atoi(slot.c_str() + slot.rfind(':') + 1);
    a.layout.local_size = local_size[host];
    a.layout.cross_rank = 0;
    for (size_t h = 0; h < hosts.size(); ++h) {
      if (hosts[h] == host) a.layout.cross_rank = static_cast<int>(h);
    }
    a.layout.cross_size = static_cast<int>(hosts.size());
    a.sync = sync != 0;
    plan.slots[slot] = a;
    plan.workers[slot] = worker;
  }
  server.set_generation(generation);
  return server.board().Publish(std::move(plan));
}

// Signed as hvdrun signs it: with the key of the slot's admitted worker.
Status Notify(rdv::RendezvousServer& server, const std::string& secret,
              const std::map<std::string, int64_t>& admitted,
              std::istringstream& words) {
  hvd::notify::HostsUpdated message;
  words >> message.generation;
  message.sequence = message.generation;
  for (const auto& [slot, address] : server.board().NotifyAddresses()) {
    auto worker = admitted.find(slot);
    const std::string key = hvd::common::WorkerKey(
        secret, {worker == admitted.end() ? 0 : worker->second, slot});
    Status sent = hvd::notify::SendHostsUpdated(address, key, message,
                                                std::chrono::seconds(10));
    if (!sent.ok()) return sent.WithContext("notifying " + slot);
  }
  return Status::Ok();
}

std::string Reports(rdv::RendezvousServer& server) {
  nlohmann::json all = nlohmann::json::object();
  for (const auto& [slot, report] : server.reports().Latest()) {
    nlohmann::json json = nlohmann::json::parse(rdv::EncodeReport(report));
    json["received_count"] = report.received_count;
    all[slot] = std::move(json);
  }
  return all.dump();
}

}  // namespace

int main() {
  (void)hvd::common::InitLogging("driver", 0);  // to stderr, not stdout
  const std::string secret =
      hvd::common::GetEnvString(hvd::common::env_vars::kHvdSecretKey, "");
  rdv::ServerOptions options;
  options.secret = secret;
  options.threads = 32;
  auto started = rdv::RendezvousServer::Start(options);
  if (!started.ok()) {
    std::cerr << started.status().ToString() << std::endl;
    return 1;
  }
  std::unique_ptr<rdv::RendezvousServer> server = std::move(*started);
  std::cout << "PORT " << server->port() << std::endl;
  std::map<std::string, int64_t> admitted;  // the last admit's
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    Status status;
    if (command == "admit") {
      admitted.clear();
      for (const auto& [slot, worker] : SlotWorkers(words)) {
        admitted[slot] = worker;
      }
      server->reports().Admit(admitted);
    } else if (command == "publish") {
      status = Publish(*server, words);
    } else if (command == "notify") {
      status = Notify(*server, secret, admitted, words);
    } else if (command == "reports") {
      std::cout << "REPORTS " << Reports(*server) << std::endl;
      continue;
    } else {
      status = Status::InvalidArgument("unknown command '" + command + "'");
    }
    if (status.ok()) {
      std::cout << "OK" << std::endl;
    } else {
      std::cout << "ERROR " << status.ToString() << std::endl;
    }
  }
  server->Stop();
  return 0;
}
