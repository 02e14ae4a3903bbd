#include "hvd/runtime/reporter.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "hvd/common/http_client.h"
#include "hvd/rendezvous/etcd_seal.h"
#include "hvd/rendezvous/protocol.h"
#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::runtime {

std::optional<ReporterOptions> ReporterOptions::For(
    const RuntimeConfig& config) {
  if (config.rendezvous_addr.empty() || config.worker_key.empty() ||
      config.report_interval.count() <= 0) {
    return std::nullopt;
  }
  ReporterOptions options;
  options.host = config.rendezvous_addr;
  options.port = config.rendezvous_port;
  options.key = config.worker_key;
  options.slot = config.slot;
  options.worker_id = config.worker_id;
  options.interval = config.report_interval;
  if (config.etcd) {
    options.find_driver = [etcd = *config.etcd,
                           public_key = config.job_public_key,
                           prefix = config.etcd_prefix]()
        -> std::optional<std::pair<std::string, int>> {
      rendezvous::EtcdClient client(etcd);
      auto found = rendezvous::LeadingDriverAddress(client, public_key, prefix);
      if (!found.ok()) return std::nullopt;
      return *found;
    };
  }
  return options;
}

class Reporter::Impl {
 public:
  Impl(ReporterOptions options, std::shared_ptr<WorkerStats> stats)
      : options_(std::move(options)),
        stats_(std::move(stats)),
        client_(std::make_unique<common::HttpClient>(
            ClientOptions(options_.host, options_.port, options_))),
        pid_(getpid()) {}

  void StartThread() {
    stats_->SetRecoveryListener([this] { Wake(); });
    thread_ = std::thread([this] { Run(); });
  }

  void Wake() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake_ = true;
    }
    changed_.notify_one();
  }

  void Stop() {
    // After this, no WorkerStats thread calls Wake any more.
    stats_->SetRecoveryListener(nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_one();
    std::lock_guard<std::mutex> joining(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

  int64_t accepted() const { return accepted_; }
  int64_t attempted() const { return attempted_; }

 private:
  static common::HttpClientOptions ClientOptions(const std::string& host,
                                                 int port,
                                                 const ReporterOptions& o) {
    common::HttpClientOptions client;
    client.host = host;
    client.port = port;
    client.secret = o.key;
    client.worker = common::WorkerIdentity{o.worker_id, o.slot};
    client.connect_timeout = o.timeout;
    client.read_timeout = o.timeout;
    client.max_attempts = 1;  // a failed report is dropped, never retried
    return client;
  }

  void Run() {
    bool answered = false;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      changed_.wait_for(lock, options_.interval,
                        [this] { return stop_ || wake_; });
      if (stop_) break;
      wake_ = false;
      lock.unlock();
      answered = Send();
      lock.lock();
    }
    lock.unlock();
    // The last counts, unless the driver did not answer the previous
    // report (it is gone or cut off): then the exit would wait out the
    // timeout for nothing.
    if (answered) Send();
  }

  // One report; true when the server answered (whatever it said).
  bool Send() {
    rendezvous::WorkerReport report = stats_->Report();
    report.slot = options_.slot;
    report.worker = options_.worker_id;
    report.pid = pid_;
    ++attempted_;
    auto answer = client_->Send("POST", rendezvous::protocol::kReportPath,
                                rendezvous::EncodeReport(report));
    if (!answer.ok()) {
      spdlog::debug("progress report dropped: {}", answer.status().ToString());
      FollowDriver();
      return false;
    }
    if (answer->status != 200) {
      spdlog::debug("progress report refused: {} {}",
                    common::HttpStatusText(answer->status), answer->body);
      return true;
    }
    ++accepted_;
    return true;
  }

  // After an unanswered report: the server of the hvdrun that leads now,
  // if it moved.
  void FollowDriver() {
    if (!options_.find_driver) return;
    auto found = options_.find_driver();
    if (!found || *found == driver_) return;
    driver_ = *found;
    client_ = std::make_unique<common::HttpClient>(
        ClientOptions(found->first, found->second, options_));
  }

  const ReporterOptions options_;
  const std::shared_ptr<WorkerStats> stats_;
  // Used by the thread only, as is the server they talk to.
  std::unique_ptr<common::HttpClient> client_;
  std::pair<std::string, int> driver_{options_.host, options_.port};
  const int64_t pid_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stop_ = false;  // guarded by mu_
  bool wake_ = false;  // guarded by mu_
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> attempted_{0};
  std::mutex join_mu_;  // one Stop joins, a concurrent one waits for it
  std::thread thread_;
};

std::unique_ptr<Reporter> Reporter::Start(ReporterOptions options,
                                          std::shared_ptr<WorkerStats> stats) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(stats));
  impl->StartThread();
  return std::unique_ptr<Reporter>(new Reporter(std::move(impl)));
}

Reporter::Reporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Reporter::~Reporter() {
  // WARNING: in a fork the reporter is abandoned, never freed: its thread
  // does not exist here, and its client's destructor would shut down the
  // parent's connection.
  if (!owner_.IsCurrent()) {
    (void)impl_.release();
    return;
  }
  Stop();
}

void Reporter::Wake() {
  if (owner_.IsCurrent()) impl_->Wake();
}

void Reporter::Stop() {
  if (owner_.IsCurrent()) impl_->Stop();
}

int64_t Reporter::accepted() const { return impl_->accepted(); }
int64_t Reporter::attempted() const { return impl_->attempted(); }

}  // namespace hvd::runtime
