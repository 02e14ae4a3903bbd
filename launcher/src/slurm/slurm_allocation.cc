#include "slurm/slurm_allocation.h"

#include <cstdlib>

#include "job/host_slots.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

// Bounds a malicious or mistyped list cannot pass: a cluster of more nodes
// than this is not a host list hvdrun can start workers on anyway.
constexpr size_t kMaxNodes = 1u << 16;

std::optional<long> ParseCount(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  long value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// The top-level items of a comma-separated list whose commas inside [...]
// belong to a range.
Result<std::vector<std::string_view>> SplitTopLevel(std::string_view list) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      if (i == start) {
        return Status::InvalidArgument("empty name in host list '" +
                                       std::string(list) + "'");
      }
      items.push_back(list.substr(start, i - start));
      start = i + 1;
    } else if (list[i] == '[') {
      if (++depth > 1) break;
    } else if (list[i] == ']') {
      if (--depth < 0) break;
    }
  }
  if (depth != 0) {
    return Status::InvalidArgument("unbalanced brackets in host list '" +
                                   std::string(list) + "'");
  }
  return items;
}

// Expands one item (at most one bracket group expanded per call; the rest
// recursively), appending to `out`.
Status ExpandItem(std::string_view item, std::vector<std::string>& out) {
  const size_t open = item.find('[');
  if (open == std::string_view::npos) {
    if (item.find(']') != std::string_view::npos) {
      return Status::InvalidArgument("stray ']' in host name '" +
                                     std::string(item) + "'");
    }
    if (out.size() >= kMaxNodes) {
      return Status::InvalidArgument("host list names more than " +
                                     std::to_string(kMaxNodes) + " nodes");
    }
    out.emplace_back(item);
    return Status::Ok();
  }
  const size_t close = item.find(']', open);
  if (close == std::string_view::npos) {
    return Status::InvalidArgument("unbalanced brackets in host name '" +
                                   std::string(item) + "'");
  }
  const std::string_view prefix = item.substr(0, open);
  const std::string_view ranges = item.substr(open + 1, close - open - 1);
  const std::string_view rest = item.substr(close + 1);
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    if (comma == std::string_view::npos) comma = ranges.size();
    const std::string_view range = ranges.substr(start, comma - start);
    const size_t dash = range.find('-');
    const std::string_view first_text = range.substr(0, dash);
    const std::string_view last_text =
        dash == std::string_view::npos ? first_text : range.substr(dash + 1);
    auto first = ParseCount(first_text);
    auto last = ParseCount(last_text);
    if (!first || !last || *last < *first) {
      return Status::InvalidArgument("bad range '" + std::string(range) +
                                     "' in host name '" + std::string(item) +
                                     "'");
    }
    if (static_cast<size_t>(*last - *first) >= kMaxNodes) {
      return Status::InvalidArgument("host list names more than " +
                                     std::to_string(kMaxNodes) + " nodes");
    }
    const size_t width = first_text.size();
    for (long n = *first; n <= *last; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < width) {
        number.insert(0, width - number.size(), '0');
      }
      std::string name = std::string(prefix) + number + std::string(rest);
      Status expanded = ExpandItem(name, out);
      if (!expanded.ok()) return expanded;
    }
    start = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostList(std::string_view list) {
  auto items = SplitTopLevel(list);
  if (!items.ok()) return items.status();
  std::vector<std::string> names;
  for (std::string_view item : *items) {
    Status expanded = ExpandItem(item, names);
    if (!expanded.ok()) return expanded;
  }
  return names;
}

Result<std::vector<int>> ExpandNodeCounts(std::string_view counts) {
  std::vector<int> out;
  auto bad = [&counts] {
    return Status::InvalidArgument("bad per-node count list '" +
                                   std::string(counts) +
                                   "' (expected e.g. 2(x3),1)");
  };
  size_t start = 0;
  while (start <= counts.size()) {
    size_t comma = counts.find(',', start);
    if (comma == std::string_view::npos) comma = counts.size();
    std::string_view item = counts.substr(start, comma - start);
    long repeat = 1;
    const size_t paren = item.find('(');
    if (paren != std::string_view::npos) {
      if (item.size() < paren + 4 || item.substr(paren, 2) != "(x" ||
          item.back() != ')') {
        return bad();
      }
      auto times = ParseCount(item.substr(paren + 2, item.size() - paren - 3));
      if (!times || *times < 1) return bad();
      repeat = *times;
      item = item.substr(0, paren);
    }
    auto value = ParseCount(item);
    if (!value || out.size() + static_cast<size_t>(repeat) > kMaxNodes) {
      return bad();
    }
    out.insert(out.end(), static_cast<size_t>(repeat),
               static_cast<int>(*value));
    start = comma + 1;
  }
  return out;
}

EnvLookup ProcessEnvironment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Result<std::optional<SlurmAllocation>> AllocationFromEnvironment(
    const EnvLookup& env) {
  auto job = env("SLURM_JOB_ID");
  if (!job || job->empty()) return std::optional<SlurmAllocation>();
  SlurmAllocation allocation;
  allocation.job_id = *job;
  auto list = env("SLURM_JOB_NODELIST");
  const char* list_name = "SLURM_JOB_NODELIST";
  if (!list) {
    list = env("SLURM_NODELIST");
    list_name = "SLURM_NODELIST";
  }
  if (!list || list->empty()) {
    return Status::InvalidArgument(
        "SLURM_JOB_ID is set but SLURM_JOB_NODELIST is not: is this a Slurm "
        "allocation? (--launcher ssh or local starts workers without Slurm)");
  }
  auto nodes = ExpandHostList(*list);
  if (!nodes.ok()) {
    return nodes.status().WithContext(std::string(list_name) + "=" + *list);
  }
  std::optional<int> cpus_per_task;
  if (auto text = env("SLURM_CPUS_PER_TASK")) {
    auto value = ParseCount(*text);
    if (!value || *value < 1) {
      return Status::InvalidArgument("SLURM_CPUS_PER_TASK='" + *text +
                                     "' is not a positive count");
    }
    cpus_per_task = static_cast<int>(*value);
  }
  allocation.cpus_per_task = cpus_per_task;
  const char* counts_name = "SLURM_TASKS_PER_NODE";
  auto counts_text = env(counts_name);
  int divisor = 1;
  if (!counts_text) {
    counts_name = "SLURM_JOB_CPUS_PER_NODE";
    counts_text = env(counts_name);
    divisor = cpus_per_task.value_or(1);
  }
  if (!counts_text) {
    return Status::InvalidArgument(
        "neither SLURM_TASKS_PER_NODE nor SLURM_JOB_CPUS_PER_NODE is set: "
        "cannot tell the slots of the allocation's nodes; give -H");
  }
  auto counts = ExpandNodeCounts(*counts_text);
  if (!counts.ok()) {
    return counts.status().WithContext(std::string(counts_name));
  }
  if (counts->size() != nodes->size()) {
    return Status::InvalidArgument(
        std::string(counts_name) + "=" + *counts_text + " gives " +
        std::to_string(counts->size()) + " nodes, " + list_name + "=" + *list +
        " names " + std::to_string(nodes->size()));
  }
  HostListBuilder listed;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const int slots = (*counts)[i] / divisor;
    if (slots == 0) continue;
    auto added = listed.Add(HostSlots{(*nodes)[i], slots}, list_name);
    if (!added.ok()) return added;
  }
  allocation.nodes = listed.Take();
  if (allocation.nodes.empty()) {
    return Status::InvalidArgument(std::string(counts_name) + "=" +
                                   *counts_text + " leaves no slot");
  }
  return std::optional<SlurmAllocation>(std::move(allocation));
}

}  // namespace hvd::launcher
