// hvd side of the rendezvous benchmark (scripts/bench/rendezvous/run.sh).
// Starts a RendezvousServer in this process and drives it with real client
// processes (or, for the rendezvous round, one thread per simulated worker),
// every request signed. Prints one JSON line per measurement.
//
//   hvd_kv_bench get|set <clients> <seconds>
//   hvd_kv_bench barrier <clients> <rounds>
//   hvd_kv_bench round <workers> [polls_per_second]
//   hvd_kv_bench etcd-round <workers> <etcd endpoints>
//
// With polls_per_second > 0 the round runs while hvdrun's status server
// (launcher/src/status/status_server.h) serves a job of <workers> ranks and a
// poller asks it for the page, status.json and /metrics in turn at that
// rate (issue 14: watching must not slow the round).
//
// etcd-round is the same round through etcd instead of the embedded server
// (issue 32): each simulated worker sets its sealed address with an
// EtcdStore and waits for everyone's, as Gloo's rendezvous would.
//
//   hvd_kv_bench connect <ranks> [<etcd endpoints>]
//
// connect is the part of a reset that the store carries: <ranks> threads,
// each a Gloo rank with its own TCP device, connect one full mesh through
// the embedded server's HttpStore (with its prefetch groups) or, given
// endpoints, through EtcdStore, exactly as the runtime's global context
// does (runtime/src/transport/gloo_contexts.cc).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <httplib.h>

#include "hvd/common/hmac.h"
#include "hvd/common/logging.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/client.h"
#include "hvd/rendezvous/etcd_store.h"
#include "hvd/rendezvous/http_store.h"
#include "hvd/rendezvous/server.h"
#include "policy/job_policy.h"
#include "status/job_record.h"
#include "status/status_server.h"
#include "status/status_snapshots.h"

namespace {

using hvd::rendezvous::RendezvousClient;
using hvd::rendezvous::RendezvousServer;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "hvd_kv_bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(const hvd::common::Status& status, const char* what) {
  if (!status.ok()) Die(std::string(what) + ": " + status.ToString());
}

hvd::common::HttpClientOptions ClientOptions(const RendezvousServer& server,
                                             const std::string& secret) {
  hvd::common::HttpClientOptions options;
  options.host = "127.0.0.1";
  options.port = server.port();
  options.secret = secret;
  return options;
}

// Every client process meets here before and after its timed part.
void Barrier(RendezvousClient& client, const std::string& name, int me,
             int count) {
  Check(client.Set("sync", name + "/" + std::to_string(me), "1"), "barrier");
  Check(client.WaitPrefix("sync", name + "/", count, 120s).status(), "barrier");
}

// Client processes are forked before the server starts: forking a process
// whose server threads may hold OpenSSL or allocator locks can leave the
// child deadlocked. Each child waits for the server's port on a pipe, then
// runs body(client, index).
class ClientProcesses {
 public:
  using Body = std::function<void(RendezvousClient&, int)>;

  ClientProcesses(int count, const std::string& secret, Body body) {
    for (int i = 0; i < count; ++i) {
      int fds[2];
      if (pipe(fds) != 0) Die("pipe failed");
      pid_t pid = fork();
      if (pid < 0) Die("fork failed");
      if (pid == 0) {
        close(fds[1]);
        int port = 0;
        if (read(fds[0], &port, sizeof(port)) != sizeof(port)) _exit(1);
        hvd::common::HttpClientOptions options;
        options.host = "127.0.0.1";
        options.port = port;
        options.secret = secret;
        RendezvousClient client(options);
        body(client, i);
        std::fflush(stdout);
        _exit(0);
      }
      close(fds[0]);
      port_pipes_.push_back(fds[1]);
      pids_.push_back(pid);
    }
  }

  // Hands every child the port, then waits for all of them.
  void Run(int port) {
    for (int fd : port_pipes_) {
      if (write(fd, &port, sizeof(port)) != sizeof(port)) Die("pipe write");
      close(fd);
    }
    for (pid_t pid : pids_) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        Die("a client process failed");
      }
    }
  }

 private:
  std::vector<int> port_pipes_;
  std::vector<pid_t> pids_;
};

std::unique_ptr<RendezvousServer> StartServer(const std::string& secret,
                                              int clients) {
  hvd::rendezvous::ServerOptions options;
  options.secret = secret;
  // A thread per connection: the clients, the barrier's waiters, a margin.
  options.threads = static_cast<size_t>(clients) + 16;
  auto server = RendezvousServer::Start(options);
  Check(server.status(), "server");
  return std::move(*server);
}

void BenchOps(const std::string& secret, const std::string& op, int clients,
              double seconds) {
  ClientProcesses processes(
      clients, secret, [&](RendezvousClient& client, int me) {
        std::string key = "k" + std::to_string(me);
        std::string value(64, 'v');
        Check(client.Set("bench", key, value), "set");
        Barrier(client, op + "-start", me, clients);
        auto end = Clock::now() + std::chrono::duration<double>(seconds);
        uint64_t ops = 0;
        while (Clock::now() < end) {
          if (op == "get") {
            Check(client.Get("bench", key).status(), "get");
          } else {
            Check(client.Set("bench", key, value), "set");
          }
          ++ops;
        }
        Check(client.Set("ops", std::to_string(me), std::to_string(ops)),
              "report");
      });
  auto server = StartServer(secret, clients);
  processes.Run(server->port());
  RendezvousClient reader(ClientOptions(*server, secret));
  auto counts = reader.WaitPrefix("ops", "", clients, 10s);
  Check(counts.status(), "collect");
  uint64_t total = 0;
  for (const auto& [rank, ops] : *counts) total += std::stoull(ops);
  std::printf(
      "{\"system\": \"hvd\", \"bench\": \"%s\", \"clients\": %d, "
      "\"ops_per_s\": %.0f}\n",
      op.c_str(), clients, double(total) / seconds);
}

void BenchBarrier(const std::string& secret, int clients, int rounds) {
  ClientProcesses processes(
      clients, secret, [&](RendezvousClient& client, int me) {
        Barrier(client, "warmup", me, clients);
        auto start = Clock::now();
        for (int round = 0; round < rounds; ++round) {
          Barrier(client, "round" + std::to_string(round), me, clients);
        }
        double per_round =
            std::chrono::duration<double>(Clock::now() - start).count() /
            rounds;
        if (me == 0) {
          std::printf(
              "{\"system\": \"hvd\", \"bench\": \"barrier\", \"clients\": %d, "
              "\"seconds\": %.6f}\n",
              clients, per_round);
        }
      });
  auto server = StartServer(secret, clients);
  processes.Run(server->port());
}

// hvdrun's status server for a static job of `workers` ranks (8 a host),
// a thread in the driver's role that builds snapshots when asked, and a
// poller.
class WatchedJob {
 public:
  WatchedJob(int workers, double polls_per_second)
      : policy_(Config(workers), Hosts(workers)),
        record_(hvd::launcher::JobFacts{false, workers, workers, 0,
                                        "python train.py"},
                Clock::now(), 0),
        snapshots_([this] {
          std::lock_guard<std::mutex> lock(mu_);
          wanted_ = true;
          cv_.notify_all();
        }) {
    hvd::launcher::Actions actions = policy_.Start(Clock::now());
    record_.OnActions(Clock::now(), actions);
    // Every rank has reported, every op type: the largest status there is.
    std::map<std::string, hvd::rendezvous::WorkerReport> reports;
    for (const auto& action : actions) {
      if (auto* start = std::get_if<hvd::launcher::StartWorker>(&action)) {
        auto tail = std::make_shared<hvd::launcher::OutputTail>();
        tail->Add("epoch 1 loss 0.25", false);
        record_.OnWorkerProcess(start->worker, 10000 + start->worker, tail);
        hvd::rendezvous::WorkerReport report;
        report.slot = hvd::launcher::SlotNameOf(start->slot);
        report.worker = start->worker;
        report.steps = 100;
        report.received = Clock::now();
        for (const char* op : {"allreduce", "allgather", "broadcast",
                               "alltoall", "reducescatter", "barrier", "join",
                               "add_process_set", "remove_process_set"}) {
          report.ops[op] = {100, 409600};
        }
        reports[report.slot] = report;
      }
    }
    record_.OnReports(reports);
    driver_ = std::thread([this] { Driver(); });
    hvd::launcher::StatusServerOptions options;
    options.token = "bench-read-token-0123456789";
    auto server = hvd::launcher::StatusServer::Start(
        options, [this] { return snapshots_.Get(1000ms, 1000ms); });
    Check(server.status(), "status server");
    server_ = std::move(*server);
    poller_ = std::thread([this, polls_per_second] { Poll(polls_per_second); });
  }
  ~WatchedJob() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    poller_.join();
    server_->Stop();
    driver_.join();
  }
  int polls() const { return polls_; }

 private:
  static hvd::launcher::PolicyConfig Config(int workers) {
    hvd::launcher::PolicyConfig config;
    config.num_proc = workers;
    return config;
  }
  static std::vector<hvd::launcher::HostSlots> Hosts(int workers) {
    std::vector<hvd::launcher::HostSlots> hosts;
    for (int i = 0; i * 8 < workers; ++i) {
      hosts.push_back({"node-" + std::to_string(i), 8});
    }
    return hosts;
  }
  void Driver() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return wanted_ || stop_; });
      if (stop_) return;
      wanted_ = false;
      lock.unlock();
      const auto now = Clock::now();
      snapshots_.Publish(record_.Snapshot(now, policy_.HostRows(now)));
      lock.lock();
    }
  }
  void Poll(double per_second) {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(10s);
    const char* paths[] = {"/", "/status.json", "/metrics"};
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / per_second));
    auto next = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      auto answer = client.Get(std::string(paths[polls_ % 3]) +
                               "?token=bench-read-token-0123456789");
      if (!answer || answer->status != 200) Die("a status poll failed");
      ++polls_;
      next += interval;
      lock.lock();
      // Pacing the load, not synchronisation: the poller's rate.
      cv_.wait_until(lock, next, [&] { return stop_; });
    }
  }

  hvd::launcher::JobPolicy policy_;
  hvd::launcher::JobRecord record_;
  hvd::launcher::StatusSnapshots snapshots_;
  std::unique_ptr<hvd::launcher::StatusServer> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false, stop_ = false;
  std::atomic<int> polls_{0};
  std::thread driver_, poller_;
};

// Holds the simulated workers of a round until they all exist, so that
// they start together and only the round is timed.
class StartGate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  // Opens the gate, joins `threads` and returns the seconds from opening.
  double OpenAndJoin(std::vector<std::thread>& threads) {
    const auto start = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
    for (auto& thread : threads) thread.join();
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// N simulated workers, one thread and one connection each: publish an
// address, then fetch everyone's with one prefix wait. With polls_per_second,
// while a poller watches a status server.
// With `worker_keys`, each simulated worker signs as a worker (its own key,
// X-Hvd-Worker; issue 33) and writes where a worker may, the Gloo scope's
// generation 0; without, every request is signed with the job secret.
void BenchRound(const std::string& secret, int workers, double polls_per_second,
                bool worker_keys = false) {
  std::unique_ptr<WatchedJob> watched;
  if (polls_per_second > 0) {
    watched = std::make_unique<WatchedJob>(workers, polls_per_second);
  }
  auto server_holder = StartServer(secret, workers);
  RendezvousServer& server = *server_holder;
  StartGate gate;
  std::vector<std::thread> threads;
  std::atomic<int> complete{0};
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&, i] {
      hvd::common::HttpClientOptions options = ClientOptions(server, secret);
      if (worker_keys) {
        options.worker = hvd::common::WorkerIdentity{
            i + 1, "10.0.0." + std::to_string(i % 250) + ":" +
                       std::to_string(i / 250)};
        options.secret = hvd::common::WorkerKey(secret, *options.worker);
      }
      const std::string scope = worker_keys ? "gloo" : "round";
      const std::string prefix = worker_keys ? "g0/addr/" : "addr/";
      RendezvousClient client(options);
      gate.Wait();
      std::string address =
          "10.0.0." + std::to_string(i % 250) + ":" + std::to_string(20000 + i);
      Check(client.Set(scope, prefix + std::to_string(i), address), "put");
      auto all = client.WaitPrefix(scope, prefix, workers, 60s);
      Check(all.status(), "fetch");
      if (static_cast<int>(all->size()) == workers) ++complete;
    });
  }
  uint64_t requests_before = server.requests_total();
  const double seconds = gate.OpenAndJoin(threads);
  if (complete != workers) Die("a worker saw an incomplete address set");
  const int polls = watched ? watched->polls() : 0;
  watched.reset();
  std::printf(
      "{\"system\": \"hvd\", \"bench\": \"%s\", \"workers\": %d, "
      "\"seconds\": %.6f, \"requests\": %llu, \"polls_per_s\": %g, "
      "\"polls\": %d}\n",
      polls_per_second > 0 ? "watched round"
      : worker_keys        ? "worker-key round"
                           : "round",
      workers, seconds,
      static_cast<unsigned long long>(server.requests_total() -
                                      requests_before),
      polls_per_second, polls);
}

// What the server spends checking one request's signature (issue 33): with
// the job secret, and with a worker's key, which it finds (or derives) from
// the X-Hvd-Worker field as the server does (WorkerKeyCache). `iterations`
// of each, alternated in blocks.
void BenchVerify(const std::string& secret, int iterations) {
  const hvd::common::WorkerIdentity who{7, "10.0.0.7:0"};
  const std::string target = "/v1/kv/gloo/g0/addr/7";
  const int64_t now = hvd::common::WallClockMs();
  auto by_secret =
      hvd::common::SignNewRequest(secret, "PUT", target, "10.0.0.7:20007", now);
  auto by_worker =
      hvd::common::SignNewRequest(hvd::common::WorkerKey(secret, who), "PUT",
                                  target, "10.0.0.7:20007", now);
  Check(by_secret.status(), "sign");
  Check(by_worker.status(), "sign");
  const std::string header = who.Header();
  auto received = [](const hvd::common::SignatureHeaders& h) {
    return hvd::common::ReceivedSignature{h.timestamp, h.nonce,
                                          h.content_sha256, h.signature};
  };
  hvd::common::WorkerKeyCache keys;
  double secret_ns = 0, worker_ns = 0;
  constexpr int kBlock = 1000;
  for (int done = 0; done < iterations; done += kBlock) {
    auto started = Clock::now();
    for (int i = 0; i < kBlock; ++i) {
      Check(hvd::common::VerifyRequestHeaders(secret, "PUT", target,
                                              received(*by_secret), now, 60s)
                .status(),
            "verify");
    }
    auto middle = Clock::now();
    for (int i = 0; i < kBlock; ++i) {
      auto known = keys.Lookup(secret, header);
      Check(known.status(), "identity");
      Check(hvd::common::VerifyRequestHeaders((*known)->key, "PUT", target,
                                              received(*by_worker), now, 60s)
                .status(),
            "verify");
    }
    auto ended = Clock::now();
    secret_ns +=
        std::chrono::duration<double, std::nano>(middle - started).count();
    worker_ns +=
        std::chrono::duration<double, std::nano>(ended - middle).count();
  }
  const int blocks = (iterations + kBlock - 1) / kBlock;
  std::printf(
      "{\"system\": \"hvd\", \"bench\": \"verify\", \"clients\": 1, "
      "\"secret_ns\": %.1f, \"worker_key_ns\": %.1f}\n",
      secret_ns / (blocks * kBlock), worker_ns / (blocks * kBlock));
}

// The round through etcd: each worker's EtcdStore sets its address and
// waits for all of them (a read, then etcd's watch for the rest).
void BenchEtcdRound(const std::string& secret, int workers,
                    const std::string& endpoints) {
  auto parsed = hvd::rendezvous::ParseEtcdEndpoints(endpoints);
  Check(parsed.status(), "etcd endpoints");
  hvd::rendezvous::EtcdOptions options;
  options.endpoints = *parsed;
  options.deadline = 30s;
  // A fresh prefix per run: nothing of an earlier run is read.
  auto nonce = hvd::common::NewNonce();
  Check(nonce.status(), "nonce");
  const std::string prefix = "/hvd-bench/" + *nonce + "/";
  std::vector<std::string> keys;
  for (int i = 0; i < workers; ++i) keys.push_back(std::to_string(i));
  StartGate gate;
  std::vector<std::thread> threads;
  std::atomic<int> complete{0};
  std::atomic<uint64_t> requests{0};
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&, i] {
      hvd::rendezvous::EtcdStore store(options, secret, prefix, 60s);
      gate.Wait();
      std::string address =
          "10.0.0." + std::to_string(i % 250) + ":" + std::to_string(20000 + i);
      try {
        store.set(std::to_string(i), {address.begin(), address.end()});
        store.wait(keys);
        int seen = 0;
        for (const std::string& key : keys) seen += !store.get(key).empty();
        if (seen == workers) ++complete;
      } catch (const std::exception& e) {
        Die(std::string("etcd round: ") + e.what());
      }
      requests += store.requests();
    });
  }
  const double seconds = gate.OpenAndJoin(threads);
  if (complete != workers) Die("a worker saw an incomplete address set");
  std::printf(
      "{\"system\": \"hvd-etcd\", \"bench\": \"round\", \"workers\": %d, "
      "\"seconds\": %.6f, \"requests\": %llu}\n",
      workers, seconds, static_cast<unsigned long long>(requests.load()));
}

// One full mesh of `ranks` Gloo ranks (threads), through the embedded
// server, or through etcd when `endpoints` is not empty.
void BenchConnect(const std::string& secret, int ranks,
                  const std::string& endpoints) {
  std::unique_ptr<RendezvousServer> server;
  hvd::rendezvous::EtcdOptions etcd;
  const bool through_etcd = !endpoints.empty();
  if (through_etcd) {
    auto parsed = hvd::rendezvous::ParseEtcdEndpoints(endpoints);
    Check(parsed.status(), "etcd endpoints");
    etcd.endpoints = *parsed;
  } else {
    server = StartServer(secret, ranks);
  }
  auto nonce = hvd::common::NewNonce();
  Check(nonce.status(), "nonce");
  // A fresh prefix per run, as a generation has.
  const std::string prefix = "/hvd-bench/" + *nonce + "/g1/global/";
  StartGate gate;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> requests{0};
  // Kept until every rank is connected: a context that goes closes its
  // pairs under a peer still connecting.
  std::vector<std::shared_ptr<gloo::rendezvous::Context>> contexts(ranks);
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      gloo::transport::tcp::attr attr("127.0.0.1");
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
      contexts[rank] = context;
      context->setTimeout(60s);
      std::unique_ptr<gloo::rendezvous::Store> store;
      std::function<uint64_t()> count;
      if (through_etcd) {
        auto e = std::make_unique<hvd::rendezvous::EtcdStore>(etcd, secret,
                                                              prefix, 60s);
        count = [raw = e.get()] { return raw->requests(); };
        store = std::move(e);
      } else {
        auto h = std::make_unique<hvd::rendezvous::HttpStore>(
            ClientOptions(*server, secret), "gloo", prefix, 60s);
        h->PrefetchFullMesh(rank, ranks);
        count = [raw = h.get()] { return raw->requests(); };
        store = std::move(h);
      }
      gate.Wait();
      try {
        context->connectFullMesh(*store, device);
      } catch (const std::exception& e) {
        Die(std::string("connect: ") + e.what());
      }
      requests += count();
    });
  }
  const double seconds = gate.OpenAndJoin(threads);
  std::printf(
      "{\"system\": \"%s\", \"bench\": \"connect\", \"workers\": %d, "
      "\"seconds\": %.6f, \"requests\": %llu}\n",
      through_etcd ? "hvd-etcd" : "hvd", ranks, seconds,
      static_cast<unsigned long long>(requests.load()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    Die("usage: hvd_kv_bench get|set <clients> <seconds> | barrier <clients> "
        "<rounds> | round <workers> | worker-key-round <workers> | verify "
        "<iterations> | etcd-round <workers> <endpoints> | connect <ranks> "
        "[<endpoints>]");
  }
  Check(hvd::common::InitLogging("bench", -1), "logging");
  const std::string mode = argv[1];
  const int count = std::atoi(argv[2]);
  // One socket per simulated worker on each side of the round benchmark.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);

  auto secret = hvd::common::NewJobSecret();
  Check(secret.status(), "secret");
  if ((mode == "get" || mode == "set") && argc == 4) {
    BenchOps(*secret, mode, count, std::atof(argv[3]));
  } else if (mode == "barrier" && argc == 4) {
    BenchBarrier(*secret, count, std::atoi(argv[3]));
  } else if (mode == "round" && (argc == 3 || argc == 4)) {
    BenchRound(*secret, count, argc == 4 ? std::atof(argv[3]) : 0);
  } else if (mode == "worker-key-round" && argc == 3) {
    BenchRound(*secret, count, 0, true);
  } else if (mode == "verify" && argc == 3) {
    BenchVerify(*secret, count);
  } else if (mode == "etcd-round" && argc == 4) {
    BenchEtcdRound(*secret, count, argv[3]);
  } else if (mode == "connect" && (argc == 3 || argc == 4)) {
    BenchConnect(*secret, count, argc == 4 ? argv[3] : "");
  } else {
    Die("unknown mode or wrong arguments: " + mode);
  }
  return 0;
}
