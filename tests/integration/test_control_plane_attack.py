"""The control plane under attack, end to end (issue 11, defects 3 and 4).

A real elastic job runs through hvdrun. Host 127.0.0.2 is added and removed
again, once without attack (the baseline) and once under each attack, aimed
at the driver's rendezvous server and at a worker's notification server at
the same time:
  (a) 500 slowloris connections each, dribbling header bytes;
  (b) unauthenticated PUT/POST announcing a 1 GiB body, then streaming it;
  (c) a captured signed request replayed over and over;
  (d) signed requests with keys and bodies that are not UTF-8.
The test asserts that the HostsUpdated push to the attacked worker and the
workers' hvd.init() into the next generation take at most twice their
baseline (the quicker of two tries, plus 1 s for a machine shared with the
attacker), that signed
requests keep answering, that the RSS of hvdrun and of the attacked worker
stays under 200 MB, that each
attack is refused the way docs/protocol.md says, and that the job ends
successfully. Every attack is bounded in count and time, targets only
127.0.0.x and stops by itself.

The attacked worker's own key (HVD_WORKER_KEY) is read from its
/proc/<pid>/environ, as an attacker who took that worker over would hold
it (for the signed attacks); it never appears on a command line.
"""

import glob
import json
import os
import resource
import socket
import statistics
import threading
import time

from conftest import ROOT
from signing import signed_request_bytes, worker_identity_from_environment

WORKER = ROOT / "tests" / "integration" / "workers" / "attack_worker.py"
PYTHON = "/usr/bin/python3"
HOSTS = "127.0.0.1:2\n"
HOSTS_ADDED = "127.0.0.1:2\n127.0.0.2:1\n"
SURVIVORS = ("127.0.0.1:0", "127.0.0.1:1")
ATTACKED_WORKER = "127.0.0.1:0"  # start rank 0
RSS_LIMIT_KB = 200 * 1024
# Added to twice the baseline: the attacker and CI's other stages share the
# machine's 2 cores, and a baseline of 30 ms doubled is inside scheduling
# noise. A stall this test looks for lasts the servers' 5 s header deadline.
SLACK_S = 1.0
GIB = 1 << 30


def wait_for(condition, timeout, what):
    """Polls `condition` until it returns something true; fails naming
    `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def check_target(host):
    assert host.startswith("127.0.0."), f"attack target {host} is not local"


def status_of(answer):
    """401 for b"HTTP/1.1 401 Unauthorized...", 0 for no answer."""
    if answer.startswith(b"HTTP/1.") and len(answer) >= 12:
        return int(answer[9:12])
    return 0


def read_answer(sock, timeout):
    """The bytes up to the end of the answer's headers (or what came before
    the peer closed or `timeout` passed)."""
    sock.settimeout(timeout)
    answer = b""
    try:
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    return answer


def exchange(host, port, request, timeout=10):
    """Sends `request` on a new connection; the answer's status (0: none)."""
    check_target(host)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        return status_of(read_answer(sock, timeout))


def vm_rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


class Attack(threading.Thread):
    """A bounded attack loop on its own thread: it ends when stopped, after
    `seconds`, or after its own count limit, whichever comes first."""

    def __init__(self, host, port, seconds=120):
        super().__init__(daemon=True)
        check_target(host)
        self.host, self.port = host, port
        self.deadline = time.monotonic() + seconds
        self.halt = threading.Event()
        self.statuses = {}
        self.error = None

    def running(self):
        return not self.halt.is_set() and time.monotonic() < self.deadline

    def count(self, status):
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def run(self):
        try:
            self.attack()
        except Exception as e:  # reported by the test, never silently lost
            self.error = repr(e)

    def stop(self):
        self.halt.set()
        self.join(timeout=30)
        assert not self.is_alive(), f"{self} did not stop"
        assert self.error is None, self.error


class Slowloris(Attack):
    """Keeps `count` connections open, each with a request that never ends
    (a header byte every 0.5 s); reconnects what the server drops, at most
    `max_connects` times."""

    def __init__(self, host, port, count=500, max_connects=20000):
        super().__init__(host, port)
        self.target_count, self.max_connects = count, max_connects
        self.connects = self.dropped = self.open = 0

    def engaged(self):
        return self.connects >= self.target_count

    def attack(self):
        socks = []
        while self.running():
            while (len(socks) < self.target_count and
                   self.connects < self.max_connects and self.running()):
                try:
                    s = socket.create_connection((self.host, self.port),
                                                 timeout=2)
                    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n"
                              b"X-Slow: ")
                    s.setblocking(False)
                except OSError:
                    break
                socks.append(s)
                self.connects += 1
            alive = []
            for s in socks:
                try:
                    if s.recv(1) == b"":  # the server closed it
                        raise ConnectionResetError
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    self.dropped += 1
                    continue
                try:
                    s.send(b"a")
                    alive.append(s)
                except BlockingIOError:
                    alive.append(s)
                except OSError:
                    s.close()
                    self.dropped += 1
            socks = alive
            self.open = len(socks)
            self.halt.wait(0.5)  # the attacker's pace
        for s in socks:
            s.close()


class HugeBody(Attack):
    """Unauthenticated requests announcing 1 GiB, then streaming zeros until
    the server cuts the connection; at most `max_attempts` of them."""

    def __init__(self, host, port, method, path, max_attempts=100000):
        super().__init__(host, port)
        self.head = (f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Length: {GIB}\r\n\r\n").encode()
        self.max_attempts = max_attempts
        self.attempts = 0
        self.max_sent = 0

    def engaged(self):
        return self.attempts >= 1

    def attack(self):
        chunk = bytes(64 * 1024)
        while self.running() and self.attempts < self.max_attempts:
            with socket.create_connection((self.host, self.port),
                                          timeout=5) as sock:
                sock.sendall(self.head)
                # The answer comes before any body byte is read.
                self.count(status_of(read_answer(sock, 5)))
                sent = 0
                try:
                    while sent < GIB and self.running():
                        sock.sendall(chunk)
                        sent += len(chunk)
                except OSError:
                    pass
                self.max_sent = max(self.max_sent, sent)
            self.attempts += 1


class Replay(Attack):
    """Sends one captured signed request, then the same bytes again and
    again (at most `max_sends`)."""

    def __init__(self, host, port, request, max_sends=100000):
        super().__init__(host, port)
        self.request, self.max_sends = request, max_sends
        self.first = None
        self.sends = 0

    def engaged(self):
        return self.sends >= 2

    def attack(self):
        self.first = exchange(self.host, self.port, self.request)
        self.sends = 1
        while self.running() and self.sends < self.max_sends:
            self.count(exchange(self.host, self.port, self.request))
            self.sends += 1


class SignedGarbage(Attack):
    """Freshly signed requests (so not replays) whose keys or bodies are not
    UTF-8, made by `make()`; at most `max_sends`."""

    def __init__(self, host, port, make, max_sends=100000):
        super().__init__(host, port)
        self.make, self.max_sends = make, max_sends
        self.sends = 0

    def engaged(self):
        return self.sends >= 1

    def attack(self):
        while self.running() and self.sends < self.max_sends:
            for request in self.make():
                self.count(exchange(self.host, self.port, request))
                self.sends += 1


class RssSampler(threading.Thread):
    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids = dict(pids)
        self.peak_kb = {name: 0 for name in self.pids}
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            for name, pid in self.pids.items():
                self.peak_kb[name] = max(self.peak_kb[name], vm_rss_kb(pid))
            self.halt.wait(0.1)

    def stop(self):
        self.halt.set()
        self.join(timeout=10)


class Job:
    """The elastic job, its output (read on threads so pipes never fill)
    and the workers' records."""

    def __init__(self, hvdrun, tmp_path):
        self.dir = tmp_path
        self.log = tmp_path / "log"
        self.log.mkdir()
        self.hosts = tmp_path / "hosts.txt"
        self.hosts.write_text(HOSTS)
        discover = tmp_path / "discover.sh"
        discover.write_text(f"#!/bin/sh\ncat {self.hosts}\n")
        discover.chmod(0o755)
        self.stop_file = tmp_path / "stop"
        config = tmp_path / "config.json"
        config.write_text(json.dumps(
            {"log": str(self.log), "stop_file": str(self.stop_file)}))
        env = dict(os.environ, HVD_LOG_LEVEL="info")
        self.proc = hvdrun.start(
            ["-np", "2", "--min-np", "1", "--max-np", "3",
             "--host-discovery-script", str(discover),
             "--discovery-interval", "0.2", PYTHON, str(WORKER),
             str(config)], env=env)

    def output(self):
        return ("--- stdout\n" + self.proc.text("stdout") +
                "--- stderr\n" + self.proc.text("stderr"))

    def records(self, since=0.0):
        out = []
        for path in glob.glob(str(self.log / "*.jsonl")):
            with open(path) as f:
                for line in f:
                    if line.endswith("\n"):
                        out.append(json.loads(line))
        return sorted((r for r in out if r["time"] >= since),
                      key=lambda r: r["time"])

    def worker_pid(self, slot):
        paths = glob.glob(str(self.log / f"{slot}.*.jsonl"))
        return int(paths[0].rsplit(".", 2)[1]) if paths else None

    def set_hosts(self, text):
        # Atomically: discovery must never read a half-written file.
        new = self.hosts.with_suffix(".new")
        new.write_text(text)
        os.replace(new, self.hosts)

    def notify_address(self, start_rank):
        prefix = f"[{start_rank}]<stderr>:"
        for line in self.proc.text("stderr").splitlines():
            marker = "notification server: listening on "
            if line.startswith(prefix) and marker in line:
                host, port = line.split(marker)[1].strip().rsplit(":", 1)
                return host, int(port)
        return None


def environ_of(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        items = f.read().split(b"\0")
    return dict(item.decode().split("=", 1) for item in items if b"=" in item)


def membership_change(job, hosts_text):
    """Changes the hosts; returns (push seconds to the attacked worker,
    slowest survivor's hvd.init() seconds), timed by the workers."""
    started = time.time()
    job.set_hosts(hosts_text)

    def survivors_reset():
        resets = {r["slot"] for r in job.records(started)
                  if r["event"] == "reset" and r["slot"] in SURVIVORS}
        return resets == set(SURVIVORS)

    wait_for(survivors_reset, 120,
             f"both survivors to re-init after hosts became {hosts_text!r}"
             f"\n{job.output()[-4000:]}")
    records = job.records(started)
    pushes = [r["time"] for r in records
              if r["event"] == "push" and r["slot"] == ATTACKED_WORKER]
    assert pushes, f"{ATTACKED_WORKER} re-initialized without a push"
    push = min(pushes) - started
    init = 0.0
    for slot in SURVIVORS:
        interrupt = min(r["time"] for r in records
                        if r["event"] == "interrupt" and r["slot"] == slot)
        reset = min(r["time"] for r in records
                    if r["event"] == "reset" and r["slot"] == slot)
        init = max(init, reset - interrupt)
    return push, init


def signed_requests(targets, seconds):
    """Signed requests to each (host, port, make_request) in turn for
    `seconds`; every one must be answered 200. Their durations, by target."""
    times = {i: [] for i in range(len(targets))}
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for i, (host, port, make) in enumerate(targets):
            started = time.monotonic()
            status = exchange(host, port, make())
            times[i].append(time.monotonic() - started)
            assert status == 200, (host, port, status)
        time.sleep(0.05)  # a request every 50 ms: the measurement's pace
    return times


def test_attacks_neither_stall_the_job_nor_grow_hvdrun(hvdrun, tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    job = Job(hvdrun, tmp_path)
    wait_for(lambda: {r["slot"] for r in job.records()
                      if r["event"] == "init"} >= set(SURVIVORS), 120,
             "both workers to start\n" + job.output())
    env = environ_of(job.worker_pid(ATTACKED_WORKER))
    # What a worker holds: its own key (the job's secret stays in hvdrun).
    key, worker = worker_identity_from_environment(env)
    rdv = (env["HOROVOD_GLOO_RENDEZVOUS_ADDR"],
           int(env["HOROVOD_GLOO_RENDEZVOUS_PORT"]))
    ntf = wait_for(lambda: job.notify_address(0), 30,
                   "the worker's notification server address in its log")
    check_target(rdv[0])
    check_target(ntf[0])
    rss = RssSampler({"hvdrun": job.proc.pid,
                      "worker": job.worker_pid(ATTACKED_WORKER)})
    rss.start()

    def rdv_status():
        return signed_request_bytes(key, "GET", "/v1/status", worker=worker)

    def ntf_abort():  # an Abort for generation 0 is ignored by workers
        # Signed as hvdrun signs it: with the worker's key, which the
        # notification server checks.
        return signed_request_bytes(
            key, "POST", "/v1/notify/abort",
            b'{"generation": 0, "reason": "test"}')

    def not_utf8_rendezvous():
        return [signed_request_bytes(key, method, target, b"v", worker=worker)
                for method in ("GET", "PUT", "DELETE")
                for target in ("/v1/kv/gloo/%FF%FE",
                               b"/v1/kv/gloo/k\xff\xc3")]

    def not_utf8_notify():
        return [signed_request_bytes(
            key, "POST", "/v1/notify/hosts_updated",
            b'{"generation": 0, "sequence": 1, "added": ["\xff\xfe"], '
            b'"removed": []}')]

    def captured_request():
        """A signed request that succeeds, to be replayed."""
        return signed_request_bytes(key, "GET", "/v1/status", worker=worker)

    phases = {
        "baseline": lambda: [],
        "slowloris": lambda: [Slowloris(*rdv), Slowloris(*ntf)],
        "1 GiB body": lambda: [
            HugeBody(*rdv, "PUT", "/v1/kv/attack/big"),
            HugeBody(*ntf, "POST", "/v1/notify/hosts_updated")],
        "replay": lambda: [Replay(*rdv, captured_request()),
                           Replay(*ntf, ntf_abort())],
        "non-UTF-8": lambda: [SignedGarbage(*rdv, not_utf8_rendezvous),
                              SignedGarbage(*ntf, not_utf8_notify)],
    }
    results = {}
    attacks_by_phase = {}
    try:
        for name, make in phases.items():
            attacks = make()
            for attack in attacks:
                attack.start()
            for attack in attacks:
                wait_for(attack.engaged, 60, f"the {name} attack to start")
            # Past the servers' 5 s header deadline, so that slow
            # connections are being cut and replaced while the job works.
            targets = [(*rdv, rdv_status), (*ntf, ntf_abort)]
            times = signed_requests(targets, 6)
            # The quicker of two tries: one try can lose the cores to CI's
            # other stages, a stall shows in both.
            tries = [membership_change(job, HOSTS_ADDED) +
                     membership_change(job, HOSTS) for _ in range(2)]
            push_add, init_add, push_remove, init_remove = (
                min(column) for column in zip(*tries))
            for i, more in signed_requests(targets, 1).items():
                times[i] += more
            for attack in attacks:  # so every try above was under attack
                assert attack.is_alive(), (
                    f"the {name} attack ended before the measurements did",
                    vars(attack))
                attack.stop()
            attacks_by_phase[name] = attacks
            results[name] = dict(
                push_add=push_add, init_add=init_add, push_remove=push_remove,
                init_remove=init_remove,
                rdv_latency=(statistics.median(times[0]), max(times[0])),
                ntf_latency=(statistics.median(times[1]), max(times[1])),
                rss_hvdrun_kb=rss.peak_kb["hvdrun"],
                rss_worker_kb=rss.peak_kb["worker"])
    finally:
        job.stop_file.touch()
        try:
            job.proc.wait(timeout=120)
        finally:
            rss.stop()
            print(job.output()[-20000:] if job.proc.returncode != 0 else "")

    print("\nphase        push+  init+  push-  init-  rdv req (med/max)  "
          "ntf req (med/max)  hvdrun RSS peak")
    for name, r in results.items():
        print(f"{name:12} {r['push_add']:5.2f}  {r['init_add']:5.2f}  "
              f"{r['push_remove']:5.2f}  {r['init_remove']:5.2f}  "
              f"{r['rdv_latency'][0]*1000:6.1f}/{r['rdv_latency'][1]*1000:6.1f} ms"
              f"   {r['ntf_latency'][0]*1000:6.1f}/"
              f"{r['ntf_latency'][1]*1000:6.1f} ms   "
              f"{r['rss_hvdrun_kb'] / 1024:.0f} MB")
    print(f"peak RSS: hvdrun {rss.peak_kb['hvdrun'] / 1024:.0f} MB, attacked "
          f"worker {rss.peak_kb['worker'] / 1024:.0f} MB")
    for name, attacks in attacks_by_phase.items():
        for attack in attacks:
            print(f"{name}: {type(attack).__name__} {attack.host}:{attack.port}"
                  f" statuses {attack.statuses} "
                  f"{vars(attack).get('connects', '')}")

    assert job.proc.returncode == 0, job.output()
    assert rss.peak_kb["hvdrun"] < RSS_LIMIT_KB, rss.peak_kb
    assert rss.peak_kb["worker"] < RSS_LIMIT_KB, rss.peak_kb
    base = results["baseline"]
    for name, r in results.items():
        for key in ("push_add", "init_add", "push_remove", "init_remove"):
            bound = 2 * base[key] + SLACK_S
            assert r[key] <= bound, (name, key, r[key], bound, results)
        for key in ("rdv_latency", "ntf_latency"):
            assert r[key][1] < 2.0, (name, key, r[key])

    slowloris = attacks_by_phase["slowloris"]
    for attack in slowloris:
        assert attack.connects >= 500 and attack.dropped > 0, vars(attack)
    for attack in attacks_by_phase["1 GiB body"]:
        # Refused from the headers, and never read far.
        assert set(attack.statuses) == {401}, attack.statuses
        assert attack.max_sent < 64 << 20, attack.max_sent
    for attack in attacks_by_phase["replay"]:
        assert attack.first == 200, attack.first
        assert set(attack.statuses) == {401}, attack.statuses
    for attack in attacks_by_phase["non-UTF-8"]:
        assert set(attack.statuses) == {400}, attack.statuses
