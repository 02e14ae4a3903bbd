#include "job/host_slots.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "hvd/common/env.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

bool IsHostName(const std::string& host) {
  if (host.empty() || host.size() > 253 || host[0] == '-') return false;
  return std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
           c == '-' || c == '_';
  });
}

}  // namespace

Status HostListBuilder::Add(const std::string& text, int default_slots,
                            const std::string& where) {
  HostSlots host{text, default_slots};
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    host.host = text.substr(0, colon);
    auto slots =
        common::ParseInt(text.substr(colon + 1), "slots", 1, kMaxSlotsPerHost);
    if (!slots.ok()) {
      return Status::InvalidArgument(where + " '" + text + "': slots of '" +
                                     host.host +
                                     "' must be a whole number in [1, " +
                                     std::to_string(kMaxSlotsPerHost) + "]");
    }
    host.slots = static_cast<int>(*slots);
  }
  return Admit(host, text, where);
}

Status HostListBuilder::Add(const HostSlots& host, const std::string& where) {
  if (host.slots < 1 || host.slots > kMaxSlotsPerHost) {
    return Status::InvalidArgument(
        where + " '" + host.host + "': " + std::to_string(host.slots) +
        " slots, not in [1, " + std::to_string(kMaxSlotsPerHost) + "]");
  }
  return Admit(host, host.host, where);
}

Status HostListBuilder::Admit(const HostSlots& host, const std::string& text,
                              const std::string& where) {
  // Apart from the other malformed names, to say why: a name like
  // "-oProxyCommand=..." would become an option of ssh (or of any tool a
  // host is handed to), not a host.
  if (!host.host.empty() && host.host[0] == '-') {
    return Status::InvalidArgument(
        where + " '" + text + "': host name '" + host.host +
        "' starts with '-', which ssh would read as one of its options; "
        "host names never start with '-'");
  }
  if (!IsHostName(host.host)) {
    return Status::InvalidArgument(
        where + " '" + text +
        "': not 'host' or 'host:slots' (host names: letters, digits, . - _, "
        "not starting with -)");
  }
  if (!names_.insert(host.host).second) {
    return Status::InvalidArgument(where + " '" + text + "': host '" +
                                   host.host + "' listed twice");
  }
  hosts_.push_back(host);
  return Status::Ok();
}

Result<std::vector<HostSlots>> ParseHostList(const std::string& text) {
  HostListBuilder hosts;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    auto added = hosts.Add(item, 1, "-H/--hosts");
    if (!added.ok()) return added;
  }
  if (hosts.hosts().empty()) {
    return Status::InvalidArgument("-H/--hosts needs at least one host");
  }
  return hosts.Take();
}

Result<std::vector<HostSlots>> ParseHostfile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return Status::InvalidArgument("--hostfile: cannot read '" + path + "'");
  }
  HostListBuilder hosts;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::stringstream words(line);
    std::string name, slots_word, extra;
    if (!(words >> name)) continue;
    std::string where = path + ":" + std::to_string(number);
    if (words >> slots_word) {
      if (slots_word.rfind("slots=", 0) != 0 || (words >> extra)) {
        return Status::InvalidArgument(
            where + ": expected 'host slots=N', got '" + line + "'");
      }
      name += ":" + slots_word.substr(6);
    }
    auto added = hosts.Add(name, 1, where);
    if (!added.ok()) return added;
  }
  if (hosts.hosts().empty()) {
    return Status::InvalidArgument("--hostfile '" + path + "' lists no hosts");
  }
  return hosts.Take();
}

}  // namespace hvd::launcher
