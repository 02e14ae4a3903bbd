// MetricsText: the status JSON (docs/protocol.md) in Prometheus' text
// exposition format 0.0.4. Pure. Every family is written with HELP and TYPE
// even when it has no sample yet, so a scraper sees the whole set from the
// first scrape.
#include <charconv>
#include <cmath>

#include "status/status_server.h"

namespace hvd::launcher {

using nlohmann::json;

namespace {

// Bounds of the recovery phase histograms, in seconds.
constexpr double kPhaseBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                    1,     2.5,  5,     10,   30,  60,   300};
constexpr const char* kPhases[] = {"detect",  "decide", "rendezvous",
                                   "connect", "sync",   "first_step"};
constexpr const char* kHostStates[] = {"running", "idle", "blacklisted",
                                       "removed"};

std::string Escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Value(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char text[32];
  auto [end, error] = std::to_chars(text, text + sizeof(text), v);
  return error == std::errc() ? std::string(text, end) : "NaN";
}

class Writer {
 public:
  void Family(const std::string& name, const std::string& type,
              const std::string& help) {
    out_ +=
        "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void Sample(const std::string& name, const std::string& labels, double v) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " " + Value(v) + "\n";
  }
  std::string str() const { return out_; }

 private:
  std::string out_;
};

std::string Label(const std::string& name, const std::string& value) {
  return name + "=\"" + Escape(value) + "\"";
}

double Num(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : 0;
}

}  // namespace

std::string MetricsText(const json& status) {
  Writer w;
  const json& job = StatusField(status, "job");

  w.Family("hvd_world_size", "gauge", "Ranks in the newest generation.");
  w.Sample("hvd_world_size", "", Num(job, "world_size"));
  w.Family("hvd_generation", "gauge", "Number of the newest generation.");
  w.Sample("hvd_generation", "", Num(job, "generation"));
  w.Family("hvd_resets_total", "counter",
           "Generations after the first that every slot joined, by what "
           "began them.");
  const json& resets = StatusField(job, "resets_by_cause");
  for (const char* cause : {"failure", "hosts", "other"}) {
    w.Sample("hvd_resets_total", Label("cause", cause), Num(resets, cause));
  }
  w.Family("hvd_worker_failures_total", "counter", "Workers that failed.");
  w.Sample("hvd_worker_failures_total", "", Num(job, "failures"));

  w.Family("hvd_hosts", "gauge", "Hosts of the job by state.");
  std::map<std::string, int> hosts;
  for (const json& host : StatusField(status, "hosts")) {
    ++hosts[host.value("state", "")];
  }
  for (const char* state : kHostStates) {
    w.Sample("hvd_hosts", Label("state", state),
             hosts.count(state) ? hosts[state] : 0);
  }

  w.Family("hvd_recovery_phase_seconds", "histogram",
           "How long each phase of forming a generation took (detect, "
           "decide, rendezvous, connect, sync, first_step).");
  for (const char* phase : kPhases) {
    std::vector<double> values;
    for (const json& r : StatusField(status, "recoveries")) {
      const json& phases = StatusField(r, "phases");
      auto it = phases.find(std::string(phase) + "_ms");
      if (it != phases.end() && it->is_number()) {
        values.push_back(it->get<double>() / 1000);
      }
    }
    double sum = 0;
    for (double v : values) sum += v;
    const std::string label = Label("phase", phase);
    for (double bound : kPhaseBuckets) {
      size_t count = 0;
      for (double v : values) count += v <= bound ? 1 : 0;
      w.Sample("hvd_recovery_phase_seconds_bucket",
               label + "," + Label("le", Value(bound)),
               static_cast<double>(count));
    }
    w.Sample("hvd_recovery_phase_seconds_bucket",
             label + "," + Label("le", "+Inf"),
             static_cast<double>(values.size()));
    w.Sample("hvd_recovery_phase_seconds_sum", label, sum);
    w.Sample("hvd_recovery_phase_seconds_count", label,
             static_cast<double>(values.size()));
  }

  const json& rendezvous = StatusField(status, "rendezvous");
  const json& requests = StatusField(rendezvous, "requests");
  w.Family("hvd_rendezvous_requests_total", "counter",
           "Requests the rendezvous server answered, by status class.");
  for (const char* code : {"2xx", "4xx", "401", "5xx"}) {
    w.Sample("hvd_rendezvous_requests_total", Label("code", code),
             Num(requests, code));
  }
  w.Family("hvd_rendezvous_request_seconds", "histogram",
           "How long the rendezvous server took to answer a request, "
           "long-poll waits (check-ins, prefix waits) included.");
  const json& took = StatusField(rendezvous, "handler_seconds");
  const json bounds = StatusField(took, "bounds");
  const json counts = StatusField(took, "counts");
  double cumulative = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i].is_number() ? counts[i].get<double>() : 0;
    const std::string le = i < bounds.size() && bounds[i].is_number()
                               ? Value(bounds[i].get<double>())
                               : "+Inf";
    w.Sample("hvd_rendezvous_request_seconds_bucket", Label("le", le),
             cumulative);
  }
  if (!counts.empty()) {
    w.Sample("hvd_rendezvous_request_seconds_sum", "", Num(took, "sum"));
    w.Sample("hvd_rendezvous_request_seconds_count", "", cumulative);
  }
  w.Family("hvd_rendezvous_waiters", "gauge",
           "Long-polls waiting on the rendezvous store now.");
  w.Sample("hvd_rendezvous_waiters", "", Num(rendezvous, "waiters"));

  // What the workers report.
  struct PerOp {
    const char* family;
    const char* field;
    const char* help;
  };
  const PerOp per_op[] = {
      {"hvd_worker_ops_total", "count",
       "Collective operations a worker completed, by operation."},
      {"hvd_worker_bytes_total", "bytes",
       "Bytes a worker's collective operations carried, by operation."}};
  for (const auto& [family, field, help] : per_op) {
    w.Family(family, "counter", help);
    for (const json& rank : StatusField(status, "ranks")) {
      const json& report = StatusField(rank, "report");
      if (!report.is_object()) continue;
      const std::string labels =
          Label("slot", rank.value("slot", "")) + "," +
          Label("rank", std::to_string(rank.value("rank", 0)));
      const json& ops = StatusField(report, "ops");
      for (auto it = ops.begin(); it != ops.end(); ++it) {
        // An op type the worker never ran has no series yet.
        if (Num(*it, "count") == 0) continue;
        w.Sample(family, labels + "," + Label("op", it.key()), Num(*it, field));
      }
    }
  }
  struct PerRank {
    const char* name;
    const char* type;
    const char* help;
    const char* field;
  };
  const PerRank per_rank[] = {
      {"hvd_worker_steps_total", "counter",
       "Optimizer steps a worker reported.", "steps"},
      {"hvd_worker_commits_total", "counter",
       "state.commit() calls a worker reported.", "commits"},
      {"hvd_worker_stalls_total", "counter",
       "Stall warnings a worker's stall inspector gave.", "stalls"},
      {"hvd_worker_step_rate", "gauge",
       "Steps per second of a worker over its last report interval.",
       "step_rate"},
      {"hvd_worker_report_age_seconds", "gauge",
       "Seconds since the worker's last report reached hvdrun.", nullptr}};
  const double now_ms = Num(job, "now_ms");
  for (const PerRank& metric : per_rank) {
    w.Family(metric.name, metric.type, metric.help);
    for (const json& rank : StatusField(status, "ranks")) {
      const json& report = StatusField(rank, "report");
      if (!report.is_object()) continue;
      const std::string labels =
          Label("slot", rank.value("slot", "")) + "," +
          Label("rank", std::to_string(rank.value("rank", 0)));
      double v = metric.field ? Num(report, metric.field)
                              : (now_ms - Num(report, "received_ms")) / 1000;
      w.Sample(metric.name, labels, v);
    }
  }
  return w.str();
}

}  // namespace hvd::launcher
