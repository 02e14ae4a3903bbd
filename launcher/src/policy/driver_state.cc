#include "policy/driver_state.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <stdexcept>

#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::launcher {

using nlohmann::json;

namespace {

json SavedBlacklistingJson(const HostTable::SavedBlacklisting& b) {
  json out = {{"times", b.times}};
  if (b.until_ms) out["until_ms"] = *b.until_ms;
  return out;
}

// Decoding: a field that is missing or of another type throws Malformed,
// which DecodeDriverState turns into its error.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& Field(const json& object, const char* key) {
  if (!object.is_object()) throw Malformed("expected an object");
  auto it = object.find(key);
  if (it == object.end()) throw Malformed(std::string("no '") + key + "'");
  return *it;
}

int64_t Int(const json& object, const char* key) {
  const json& value = Field(object, key);
  if (!value.is_number_integer()) {
    throw Malformed(std::string("'") + key + "' is not an integer");
  }
  return value.get<int64_t>();
}

int SmallInt(const json& object, const char* key) {
  const int64_t value = Int(object, key);
  if (value < std::numeric_limits<int>::min() ||
      value > std::numeric_limits<int>::max()) {
    throw Malformed(std::string("'") + key + "' is out of range");
  }
  return static_cast<int>(value);
}

std::string Text(const json& object, const char* key) {
  const json& value = Field(object, key);
  if (!value.is_string()) {
    throw Malformed(std::string("'") + key + "' is not a string");
  }
  return value.get<std::string>();
}

bool Flag(const json& object, const char* key) {
  const json& value = Field(object, key);
  if (!value.is_boolean()) {
    throw Malformed(std::string("'") + key + "' is not true or false");
  }
  return value.get<bool>();
}

const json& Array(const json& object, const char* key) {
  const json& value = Field(object, key);
  if (!value.is_array()) {
    throw Malformed(std::string("'") + key + "' is not a list");
  }
  return value;
}

const json& Object(const json& object, const char* key) {
  const json& value = Field(object, key);
  if (!value.is_object()) {
    throw Malformed(std::string("'") + key + "' is not an object");
  }
  return value;
}

HostTable::SavedBlacklisting SavedBlacklistingOf(const json& object) {
  HostTable::SavedBlacklisting b;
  b.times = SmallInt(object, "times");
  if (object.contains("until_ms")) b.until_ms = Int(object, "until_ms");
  return b;
}

rendezvous::GenerationPlan PlanOf(const json& object) {
  rendezvous::GenerationPlan plan;
  plan.generation = Int(object, "generation");
  plan.reason = Text(object, "reason");
  for (const json& host : Array(object, "hosts")) {
    if (!host.is_string()) throw Malformed("a plan's host is not a string");
    plan.hosts.push_back(host.get<std::string>());
  }
  for (const auto& [slot, assignment] : Object(object, "slots").items()) {
    auto decoded = rendezvous::DecodeAssignment(assignment.dump());
    if (!decoded.ok()) {
      throw Malformed("slot " + slot + ": " + decoded.status().message());
    }
    plan.slots[slot] = *decoded;
  }
  for (const auto& [slot, worker] : Object(object, "workers").items()) {
    if (!worker.is_number_integer()) {
      throw Malformed("slot " + slot + "'s worker is not an integer");
    }
    plan.workers[slot] = worker.get<int64_t>();
  }
  return plan;
}

}  // namespace

std::string EncodeDriverState(const DriverState& state) {
  json slots = json::object();
  for (const auto& [slot, assignment] : state.plan.slots) {
    slots[slot] = json::parse(rendezvous::EncodeAssignment(assignment));
  }
  json plan = {{"generation", state.plan.generation},
               {"reason", state.plan.reason},
               {"hosts", state.plan.hosts},
               {"slots", std::move(slots)},
               {"workers", state.plan.workers}};
  json workers = json::array();
  for (const SavedWorker& w : state.workers) {
    workers.push_back({{"id", w.id},
                       {"slot", w.slot},
                       {"host", w.host},
                       {"index", w.index},
                       {"start_rank", w.start_rank},
                       {"joined", w.joined},
                       {"joined_rank", w.joined_rank},
                       {"stopping", w.stopping},
                       {"pid", w.pid},
                       {"notify", w.notify},
                       {"adoptable", w.adoptable}});
  }
  json hosts = json::array();
  for (const HostTable::SavedHost& h : state.hosts) {
    json slots_out = json::object();
    for (const auto& [index, out] : h.slots_out) {
      slots_out[std::to_string(index)] = SavedBlacklistingJson(out);
    }
    hosts.push_back({{"host", h.host},
                     {"slots", h.slots},
                     {"listed", h.listed},
                     {"blacklisting", SavedBlacklistingJson(h.blacklisting)},
                     {"slots_out", std::move(slots_out)}});
  }
  return json{{"plan", std::move(plan)},
              {"complete_generation", state.complete_generation},
              {"holders", state.holders},
              {"resets", state.resets},
              {"next_worker_id", state.next_worker_id},
              {"workers", std::move(workers)},
              {"hosts", std::move(hosts)}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

common::Result<DriverState> DecodeDriverState(std::string_view text) {
  const std::string what = "the driver's state in etcd";
  if (text.size() > kMaxDriverStateBytes) {
    return common::Status::InvalidArgument(
        what + " is " + std::to_string(text.size()) + " bytes, over " +
        std::to_string(kMaxDriverStateBytes));
  }
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return common::Status::InvalidArgument(what + " is not a JSON object");
  }
  try {
    DriverState state;
    state.plan = PlanOf(Object(parsed, "plan"));
    state.complete_generation = Int(parsed, "complete_generation");
    for (const json& id : Array(parsed, "holders")) {
      if (!id.is_number_integer()) throw Malformed("a holder is no integer");
      state.holders.push_back(id.get<int64_t>());
    }
    state.resets = SmallInt(parsed, "resets");
    state.next_worker_id = Int(parsed, "next_worker_id");
    for (const json& w : Array(parsed, "workers")) {
      SavedWorker worker;
      worker.id = Int(w, "id");
      worker.slot = Text(w, "slot");
      worker.host = Text(w, "host");
      worker.index = SmallInt(w, "index");
      worker.start_rank = SmallInt(w, "start_rank");
      worker.joined = Int(w, "joined");
      worker.joined_rank = SmallInt(w, "joined_rank");
      worker.stopping = Flag(w, "stopping");
      worker.pid = Int(w, "pid");
      worker.notify = Text(w, "notify");
      worker.adoptable = Flag(w, "adoptable");
      state.workers.push_back(std::move(worker));
    }
    for (const json& h : Array(parsed, "hosts")) {
      HostTable::SavedHost host;
      host.host = Text(h, "host");
      host.slots = SmallInt(h, "slots");
      host.listed = Flag(h, "listed");
      host.blacklisting = SavedBlacklistingOf(Object(h, "blacklisting"));
      for (const auto& [index, out] : Object(h, "slots_out").items()) {
        size_t used = 0;
        int number = -1;
        try {
          number = std::stoi(index, &used);
        } catch (const std::exception&) {
        }
        if (number < 0 || used != index.size()) {
          throw Malformed("host " + host.host + ": slot index '" + index +
                          "' is not a number");
        }
        host.slots_out[number] = SavedBlacklistingOf(out);
      }
      state.hosts.push_back(std::move(host));
    }
    return state;
  } catch (const Malformed& error) {
    return common::Status::InvalidArgument(what +
                                           " is malformed: " + error.what());
  }
}

}  // namespace hvd::launcher
