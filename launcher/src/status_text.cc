// StatusText: the status JSON (docs/protocol.md) as `hvdrun status` prints
// it. Pure; missing fields print as "-".
#include <ctime>
#include <iomanip>
#include <sstream>

#include "status_server.h"

namespace hvd::launcher {

using nlohmann::json;

namespace {

double Number(const json& value, double otherwise = 0) {
  return value.is_number() ? value.get<double>() : otherwise;
}

std::string Str(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "-";
  return value.dump();
}

// "1.23 s", "45 ms", "-".
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
  const json& job = status.value("job", json::object());
  const double now_ms = Number(job.value("now_ms", json()));
  out << "job: " << Str(job.value("state", json())) << ", generation "
      << Str(job.value("generation", json())) << ", "
      << Str(job.value("world_size", json())) << " ranks, "
      << Str(job.value("resets", json())) << " resets, "
      << Str(job.value("failures", json())) << " failures, up "
      << Duration(now_ms - Number(job.value("started_ms", json()), now_ms))
      << "\n";
  if (job.value("exit_code", json()).is_number()) {
    out << "exit code: " << Str(job["exit_code"]) << "\n";
  }
  out << "command: " << Str(job.value("command", json())) << "\n";

  out << "\nhosts\n";
  Table hosts({"HOST", "SLOTS", "STATE", "WORKERS", "NOTE"});
  for (const json& host : status.value("hosts", json::array())) {
    std::string note;
    if (host.value("state", "") == "blacklisted") {
      const json& until = host.value("usable_again_ms", json());
      note = until.is_number()
                 ? "usable again in " + Duration(Number(until) - now_ms)
                 : "for good";
    }
    hosts.Add({Str(host.value("host", json())),
               Str(host.value("slots", json())),
               Str(host.value("state", json())),
               Str(host.value("workers", json())), note});
  }
  hosts.Print(out);

  out << "\nranks (generation " << Str(job.value("generation", json()))
      << ")\n";
  Table ranks(
      {"RANK", "SLOT", "PID", "CHECKED IN", "STEPS", "STEPS/S", "LAST REPORT"});
  for (const json& rank : status.value("ranks", json::array())) {
    const json& report = rank.value("report", json());
    const bool has = report.is_object();
    ranks.Add({Str(rank.value("rank", json())), Str(rank.value("slot", json())),
               Str(rank.value("pid", json())),
               rank.value("checked_in", false) ? "yes" : "no",
               has ? Str(report.value("steps", json())) : "-",
               has && report.value("step_rate", json()).is_number()
                   ? [&] {
                       std::ostringstream rate;
                       rate << std::fixed << std::setprecision(2)
                            << Number(report["step_rate"]);
                       return rate.str();
                     }()
                   : "-",
               has ? Age(report.value("received_ms", json()), now_ms) : "-"});
  }
  ranks.Print(out);

  const json& recoveries = status.value("recoveries", json::array());
  if (!recoveries.empty()) {
    out << "\ngenerations and their recovery\n";
    Table table({"GEN", "CAUSE", "DETECT", "DECIDE", "RENDEZVOUS", "CONNECT",
                 "STATE SYNC", "FIRST STEP", "REASON"});
    for (const json& r : recoveries) {
      const json& p = r.value("phases", json::object());
      table.Add({Str(r.value("generation", json())),
                 Str(r.value("cause", json())),
                 Duration(p.value("detect_ms", json())),
                 Duration(p.value("decide_ms", json())),
                 Duration(p.value("rendezvous_ms", json())),
                 Duration(p.value("connect_ms", json())),
                 Duration(p.value("sync_ms", json())),
                 Duration(p.value("first_step_ms", json())),
                 Str(r.value("reason", json()))});
    }
    table.Print(out);
  }

  const json& failures = status.value("failures", json::array());
  if (!failures.empty()) {
    out << "\nfailures\n";
    for (const json& f : failures) {
      out << "  " << ClockTime(f.value("at_ms", json())) << " slot "
          << Str(f.value("slot", json())) << " (rank "
          << Str(f.value("rank", json())) << ", pid "
          << Str(f.value("pid", json())) << ") " << Str(f.value("what", json()))
          << "; exit code " << Str(f.value("exit_code", json()));
      if (f.value("signal", json()).is_string()) {
        out << ", " << Str(f["signal"]);
      }
      out << "\n";
      for (const json& line : f.value("output_tail", json::array())) {
        out << "    | " << Str(line.value("text", json())) << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace hvd::launcher
