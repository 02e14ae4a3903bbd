// StatusText: the status JSON (docs/protocol.md) as `hvdrun status` prints
// it. Pure; missing fields print as "-".
#include <ctime>
#include <iomanip>
#include <sstream>

#include "hvd/common/logging.h"
#include "status/status_server.h"

namespace hvd::launcher {

using nlohmann::json;

namespace {

double Number(const json& value, double otherwise = 0) {
  return value.is_number() ? value.get<double>() : otherwise;
}

std::string Str(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "-";
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// "1.23 s", "45 ms", "-".
// "1 rank", "3 ranks"; what Str gives when the value is not a count.
std::string Counted(const json& value, const std::string& one) {
  if (!value.is_number_integer()) return Str(value) + " " + one + "s";
  return common::Count(value.get<int64_t>(), one);
}

std::string Duration(const json& ms) {
  if (!ms.is_number()) return "-";
  std::ostringstream out;
  double v = ms.get<double>();
  if (v < 1000) {
    out << std::fixed << std::setprecision(0) << v << " ms";
  } else {
    out << std::fixed << std::setprecision(2) << v / 1000 << " s";
  }
  return out.str();
}

std::string Age(const json& at_ms, double now_ms) {
  if (!at_ms.is_number()) return "-";
  return Duration(now_ms - at_ms.get<double>()) + " ago";
}

std::string ClockTime(const json& at_ms) {
  if (!at_ms.is_number()) return "-";
  std::time_t seconds = static_cast<std::time_t>(at_ms.get<double>() / 1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[16];
  std::strftime(text, sizeof(text), "%H:%M:%S", &local);
  return text;
}

// With the etcd backend: who leads the job, or that this hvdrun is not
// sure it does, and since when.
std::string LeaderLine(const json& leader, double now_ms) {
  std::string line = "leader: ";
  const bool leading = leader.value("leading", false);
  line += Str(leader.value("this_hvdrun", json())) +
          (leading ? " leads" : " is not sure it leads") + " job '" +
          Str(leader.value("job_id", json())) + "' in etcd at " +
          Str(leader.value("etcd", json())) + ", since " +
          Age(leader.value("since_ms", json()), now_ms);
  const json& changes = leader.value("changes", json::array());
  if (!leading && changes.is_array() && !changes.empty() &&
      changes.back().is_object()) {
    line += " (" + Str(changes.back().value("reason", json())) + ")";
  }
  line += "\n";
  // An hvdrun that took the job over: from whom, and each phase's time
  // after the last one (detect, elect, rebuild, adopt).
  const json& takeover = leader.value("takeover", json());
  if (takeover.is_object()) {
    line += "takeover: from " + Str(takeover.value("from", json())) +
            ", detected at " + ClockTime(takeover.value("detected_ms", json()));
    double last = takeover.value("detected_ms", 0.0);
    for (auto [key, name] : {std::pair{"elected_ms", "elected"},
                             std::pair{"rebuilt_ms", "rebuilt"},
                             std::pair{"adopted_ms", "adopted"}}) {
      const json& at = takeover.value(key, json());
      if (!at.is_number()) break;
      char step[48];
      std::snprintf(step, sizeof(step), ", %s +%.2f s", name,
                    (at.get<double>() - last) / 1000.0);
      line += step;
      last = at.get<double>();
    }
    if (takeover.contains("adopted")) {
      line += " (" + Str(takeover.value("adopted", json())) + " of " +
              Str(takeover.value("workers", json())) + " workers)";
    }
    line += "\n";
  }
  return line;
}

// Columns padded to the widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) {
    rows_.push_back(std::move(header));
  }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostringstream& out) const {
    std::vector<size_t> width;
    for (const auto& row : rows_) {
      for (size_t i = 0; i < row.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], row[i].size());
      }
    }
    for (const auto& row : rows_) {
      std::string line = " ";
      for (size_t i = 0; i < row.size(); ++i) {
        line += " " + row[i];
        if (i + 1 < row.size())
          line += std::string(width[i] - row[i].size(), ' ');
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

std::string StatusText(const json& status) {
  std::ostringstream out;
  const json& job = StatusField(status, "job");
  const double now_ms = Number(StatusField(job, "now_ms"));
  // A standby's own answer, or (`hvdrun status` followed its redirect) the
  // leader's with what the standby said.
  const json& standby = StatusField(status, "standby");
  if (StatusField(job, "state") == "standby") {
    return StandbyText(standby, now_ms);
  }
  out << StandbyText(standby, now_ms);
  out << "job: " << Str(StatusField(job, "state")) << ", generation "
      << Str(StatusField(job, "generation")) << ", "
      << Counted(StatusField(job, "world_size"), "rank") << ", "
      << Counted(StatusField(job, "resets"), "reset") << ", "
      << Counted(StatusField(job, "failures"), "failure") << ", up "
      << Duration(now_ms - Number(StatusField(job, "started_ms"), now_ms))
      << "\n";
  if (StatusField(job, "exit_code").is_number()) {
    out << "exit code: " << Str(job["exit_code"]) << "\n";
  }
  out << "command: " << Str(StatusField(job, "command")) << "\n";
  if (status.contains("leader")) out << LeaderLine(status["leader"], now_ms);

  out << "\nhosts\n";
  Table hosts({"HOST", "SLOTS", "STATE", "WORKERS", "NOTE"});
  for (const json& host : StatusField(status, "hosts")) {
    std::string note;
    if (host.value("state", "") == "blacklisted") {
      const json& until = StatusField(host, "usable_again_ms");
      note = until.is_number()
                 ? "usable again in " + Duration(Number(until) - now_ms)
                 : "for good";
    }
    hosts.Add({Str(StatusField(host, "host")), Str(StatusField(host, "slots")),
               Str(StatusField(host, "state")),
               Str(StatusField(host, "workers")), note});
  }
  hosts.Print(out);

  out << "\nranks (generation " << Str(StatusField(job, "generation")) << ")\n";
  Table ranks(
      {"RANK", "SLOT", "PID", "CHECKED IN", "STEPS", "STEPS/S", "LAST REPORT"});
  for (const json& rank : StatusField(status, "ranks")) {
    const json& report = StatusField(rank, "report");
    const bool has = report.is_object();
    ranks.Add({Str(StatusField(rank, "rank")), Str(StatusField(rank, "slot")),
               Str(StatusField(rank, "pid")),
               rank.value("checked_in", false) ? "yes" : "no",
               has ? Str(StatusField(report, "steps")) : "-",
               has && StatusField(report, "step_rate").is_number()
                   ? [&] {
                       std::ostringstream rate;
                       rate << std::fixed << std::setprecision(2)
                            << Number(report["step_rate"]);
                       return rate.str();
                     }()
                   : "-",
               has ? Age(StatusField(report, "received_ms"), now_ms) : "-"});
  }
  ranks.Print(out);

  const json& recoveries = StatusField(status, "recoveries");
  if (!recoveries.empty()) {
    out << "\ngenerations and their recovery\n";
    Table table({"GEN", "CAUSE", "DETECT", "DECIDE", "RENDEZVOUS", "CONNECT",
                 "STATE SYNC", "FIRST STEP", "REASON"});
    for (const json& r : recoveries) {
      const json& p = StatusField(r, "phases");
      table.Add({Str(StatusField(r, "generation")),
                 Str(StatusField(r, "cause")),
                 Duration(StatusField(p, "detect_ms")),
                 Duration(StatusField(p, "decide_ms")),
                 Duration(StatusField(p, "rendezvous_ms")),
                 Duration(StatusField(p, "connect_ms")),
                 Duration(StatusField(p, "sync_ms")),
                 Duration(StatusField(p, "first_step_ms")),
                 Str(StatusField(r, "reason"))});
    }
    table.Print(out);
  }

  const json& failures = StatusField(status, "failures");
  if (!failures.empty()) {
    out << "\nfailures\n";
    for (const json& f : failures) {
      out << "  " << ClockTime(StatusField(f, "at_ms")) << " slot "
          << Str(StatusField(f, "slot")) << " (rank "
          << Str(StatusField(f, "rank")) << ", pid "
          << Str(StatusField(f, "pid")) << ") " << Str(StatusField(f, "what"))
          << "; exit code " << Str(StatusField(f, "exit_code"));
      if (StatusField(f, "signal").is_string()) {
        out << ", " << Str(f["signal"]);
      }
      out << "\n";
      for (const json& line : StatusField(f, "output_tail")) {
        out << "    | " << Str(StatusField(line, "text")) << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace hvd::launcher
