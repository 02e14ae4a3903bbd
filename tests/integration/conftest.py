"""Fixtures for end-to-end tests that run the real hvdrun binary.

Every hvdrun started here runs in its own session with a hard timeout, and
whatever it leaves behind is killed when the test ends.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# HVD_BUILD_DIR: another build folder, as scripts/gpu/device-check.sh lays
# one out from its bundle on the GPU machine.
BUILD = pathlib.Path(os.environ.get("HVD_BUILD_DIR") or ROOT / "build")
HVDRUN = BUILD / "launcher" / "hvdrun"


class Child:
    """A started process whose stdout and stderr two threads read as they
    come, so that it never blocks on a full pipe, and the test can wait for
    a line of it with a deadline. Every wait here ends in a readable test
    failure that shows the output so far."""

    def __init__(self, proc, what):
        self.proc = proc
        self.pid = proc.pid
        self.what = what  # names the process in failures
        self._lines = {"stdout": [], "stderr": []}
        self._ended = set()  # streams at end-of-file
        self._changed = threading.Condition()
        self._pumps = [threading.Thread(target=self._pump, args=(name,),
                                        daemon=True)
                       for name in ("stdout", "stderr")]
        for pump in self._pumps:
            pump.start()

    def _pump(self, name):
        for line in getattr(self.proc, name):
            with self._changed:
                self._lines[name].append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._ended.add(name)
            self._changed.notify_all()

    def text(self, stream="stdout"):
        """What `stream` said so far."""
        with self._changed:
            return "".join(line + "\n" for line in self._lines[stream])

    def _so_far(self):
        return (f"--- {self.what}'s stdout so far\n{self.text('stdout')}"
                f"--- {self.what}'s stderr so far\n{self.text('stderr')}")

    def wait_for_lines(self, predicate, what, count=1, stream="stdout",
                       timeout=60):
        """The first `count` lines of `stream` (from its start) for which
        `predicate(line)` holds, once there are that many. Fails the test,
        naming `what`, when `timeout` seconds pass or the stream ends
        first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [l for l in self._lines[stream] if predicate(l)]
                if len(found) >= count:
                    return found[:count]
                if stream in self._ended:
                    pytest.fail(f"{self.what}'s {stream} ended before "
                                f"{what}\n{self._so_far()}", pytrace=False)
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(f"waited {timeout} s for {what}, in vain\n"
                                f"{self._so_far()}", pytrace=False)
                self._changed.wait(left)

    def wait_for_line(self, predicate, what, **kwargs):
        return self.wait_for_lines(predicate, what, 1, **kwargs)[0]

    # Popen's interface, every wait with a deadline.
    @property
    def returncode(self):
        return self.proc.returncode

    def poll(self):
        return self.proc.poll()

    def send_signal(self, signum):
        self.proc.send_signal(signum)

    def wait(self, timeout=60):
        return self.finish(timeout).returncode

    def communicate(self, timeout=60):
        result = self.finish(timeout)
        return result.stdout, result.stderr

    def finish(self, timeout=60):
        """CompletedProcess once the process has exited and both streams
        ended. After `timeout` seconds its whole session is killed and the
        test fails."""
        deadline = time.monotonic() + timeout
        ended = True
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            ended = False
            kill_session(self.proc)
        if not ended:
            pytest.fail(f"{self.what} did not end within {timeout} s (killed)"
                        f"\n{self._so_far()}", pytrace=False)
        for pump in self._pumps:
            # A stream ends with the process, unless something it started
            # still holds it open.
            pump.join(timeout=max(5.0, deadline - time.monotonic()))
            if pump.is_alive():
                kill_session(self.proc)
                pytest.fail(f"{self.what} exited, but its output stayed open "
                            f"(a process left behind?)\n{self._so_far()}",
                            pytrace=False)
        return subprocess.CompletedProcess(
            self.proc.args, self.proc.returncode, self.text("stdout"),
            self.text("stderr"))


def kill_session(proc):
    """SIGKILL to the session `proc` leads (started with
    start_new_session), then reaps it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def start_hvdrun(args, program=None, **kwargs):
    """Child of hvdrun `args`, in a session of its own. `program`: the
    command that runs hvdrun, when not the build's (an installed one)."""
    if program is None and not HVDRUN.exists():
        pytest.fail(f"{HVDRUN} is missing: run scripts/setup.sh first")
    program = program or [str(HVDRUN)]
    proc = subprocess.Popen([*program, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            errors="backslashreplace",
                            start_new_session=True, **kwargs)
    return Child(proc, "hvdrun")


def wait_until(predicate, what, timeout=30, interval=0.05):
    """Polls `predicate()` until it returns something true, and returns
    that; fails the test naming `what` after `timeout` seconds. For states
    that only files or /proc show (no output line announces them)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"waited {timeout} s for {what}, in vain",
                        pytrace=False)
        time.sleep(interval)


def shm_segments():
    """hvd's shared-memory segments in /dev/shm now (every bed host shares
    this machine's)."""
    return {n for n in os.listdir("/dev/shm") if n.startswith("hvd-")}


def wait_until_no_new_segments(before, timeout=10):
    """Waits until no segment is left beyond `before`: a job may leave
    none. Waits rather than looks once, because a job of another test
    running beside this one (pytest-xdist) holds its own segment for the
    moment its ranks take to map it; a leaked one never goes."""
    wait_until(lambda: shm_segments() <= before,
               "no shared-memory segment left by the job "
               f"(left: {sorted(shm_segments() - before)})", timeout=timeout)


@pytest.fixture
def hvdrun():
    """run(args, timeout=60, **popen) -> CompletedProcess of hvdrun;
    run.start(args, **popen) -> Child. Whatever is still running when the
    test ends is killed (hvdrun's whole session)."""
    started = []

    def start(args, **kwargs):
        child = start_hvdrun(args, **kwargs)
        started.append(child)
        return child

    def run(args, timeout=60, **kwargs):
        return start(args, **kwargs).finish(timeout)

    run.start = start
    yield run
    for child in started:
        if child.proc.poll() is None:
            kill_session(child.proc)


def rank_lines(text, rank, stream="stdout"):
    """The lines hvdrun relayed from `rank`'s `stream`, prefix removed."""
    prefix = f"[{rank}]<{stream}>:"
    return [l[len(prefix):] for l in text.splitlines() if l.startswith(prefix)]


# hvdrun's own lines (its "hvdrun: ..." messages and its log lines) start
# with the time unless --log-without-timestamp: "[2024-03-05 14:03:09.123] ".
HVDRUN_TIME = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] ")


def untimed(text):
    """`text`'s lines, hvdrun's own without the time they start with."""
    return [l[HVDRUN_TIME.match(l).end():] if HVDRUN_TIME.match(l) else l
            for l in text.splitlines()]


TORCH_PRELUDE = """\
import json
import sys
import torch
import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
R = {}
"""

TORCH_EPILOGUE = """
print("RESULT " + json.dumps(R), flush=True)
"""


def run_torch_workers(hvdrun, tmp_path, body, np=2, args=(),
                      name="worker.py", timeout=180):
    """Runs TORCH_PRELUDE + body + TORCH_EPILOGUE on `np` workers through
    hvdrun; each worker fills the dict R. Returns {rank: R}; any failure
    fails the test with hvdrun's whole output."""
    script = tmp_path / name
    script.write_text(TORCH_PRELUDE + textwrap.dedent(body) + TORCH_EPILOGUE)
    result = hvdrun(["-np", str(np), sys.executable, str(script),
                     *map(str, args)], timeout=timeout)
    return rank_results(result, np)


def rank_results(result, np):
    """{rank: the JSON of its one ``RESULT`` line} of a finished hvdrun of
    `np` ranks; anything else (an exit status but 0, a rank without exactly
    one such line) fails the test with hvdrun's whole output."""
    output = (f"hvdrun exited {result.returncode}\n--- stdout\n"
              f"{result.stdout}\n--- stderr\n{result.stderr}")
    assert result.returncode == 0, output
    results = {}
    for rank in range(np):
        lines = [l[len("RESULT "):] for l in rank_lines(result.stdout, rank)
                 if l.startswith("RESULT ")]
        assert len(lines) == 1, output
        results[rank] = json.loads(lines[0])
    return results


def run_worker_job(args, np, timeout=180):
    """``hvdrun -np <np> <args>`` to its end, then rank_results. Needs no
    fixture, so module-scoped fixtures can run one job for many tests; the
    job's session is killed if it outlives `timeout`."""
    child = start_hvdrun(["-np", str(np), *map(str, args)])
    try:
        result = child.finish(timeout=timeout)
    finally:
        if child.poll() is None:
            kill_session(child.proc)
    return rank_results(result, np)


CLUSTER = ROOT / "scripts" / "cluster"


class Bed:
    """A test bed of network-namespace hosts with their own sshd
    (scripts/cluster/). Its prefix and net come from HVD_TEST_BED_PREFIX and
    HVD_TEST_BED_NET (defaults "hvdt", "10.214.0"), so that two test runs on
    one machine can each have their own; under pytest-xdist each worker's
    bed (and so its Slurm's ports, scripts/cluster/slurm-lib.sh) gets its
    own too, "hvdt<N>x" on 10.215.<N> for worker gw<N>."""

    def __init__(self):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        prefix, net = "hvdt", "10.214.0"
        if re.fullmatch(r"gw\d{1,3}", worker):
            prefix, net = f"hvdt{worker[2:]}x", f"10.215.{int(worker[2:])}"
        self.prefix = os.environ.get("HVD_TEST_BED_PREFIX", prefix)
        self.net = os.environ.get("HVD_TEST_BED_NET", net)
        self.env = dict(os.environ, HVD_BED_PREFIX=self.prefix,
                        HVD_BED_NET=self.net)
        self.dir = pathlib.Path("/run/hvd-bed") / self.prefix
        self.hosts = []

    def _script(self, name, *args, timeout=60):
        result = subprocess.run([str(CLUSTER / name), *args], env=self.env,
                                capture_output=True, text=True,
                                timeout=timeout)
        if result.returncode != 0:
            pytest.fail(f"scripts/cluster/{name} {' '.join(args)} failed "
                        f"(exit {result.returncode}):\n{result.stderr}",
                        pytrace=False)
        return result.stdout.split()

    def up(self, count):
        """Starts `count` hosts; returns their names."""
        self.hosts = self._script("up.sh", str(count))
        return list(self.hosts)

    def ctl(self, *args):
        out = self._script("ctl.sh", *args)
        if args[0] == "add":
            self.hosts += out
        return out

    def address(self, host):
        return f"{self.net}.{10 + int(host[len(self.prefix):])}"

    def sshd_pid(self, host):
        try:
            return int((self.dir / host / "sshd.pid").read_text())
        except (OSError, ValueError):
            return None

    def job_pids(self, host):
        """The pids in `host` other than its sshd's listener: what a job
        left there."""
        sshd = self.sshd_pid(host)
        return [int(p) for p in self.ctl("pids", host) if int(p) != sshd]

    def wait_until_empty(self, timeout=10):
        """Waits until no host runs anything but its sshd; fails naming
        what is left."""
        deadline = time.monotonic() + timeout
        while True:
            left = {h: self.job_pids(h) for h in self.hosts}
            if not any(left.values()):
                return
            if time.monotonic() >= deadline:
                pytest.fail(f"processes left on the bed's hosts {timeout} s "
                            f"after the job: {left}", pytrace=False)
            time.sleep(0.05)

    def down(self):
        self._script("down.sh")


@pytest.fixture
def bed():
    """A Bed; call bed.up(N). When the test ends, no process may be left on
    any host (beyond sshd), then the bed is removed. Needs root."""
    if os.geteuid() != 0:
        pytest.fail("the test bed needs root (network namespaces, sshd): run "
                    "the tests as root, e.g. 'sudo scripts/test.sh'",
                    pytrace=False)
    the_bed = Bed()
    try:
        yield the_bed
        if the_bed.hosts:
            for host in the_bed.hosts:
                the_bed.ctl("heal", host)
            the_bed.wait_until_empty()
    finally:
        the_bed.down()


@pytest.fixture
def slurm(bed):
    """A Slurm over the bed (test_slurm.Slurm); call slurm.up() after
    bed.up(N)."""
    from test_slurm import Slurm
    cluster = Slurm(bed)
    try:
        yield cluster
    finally:
        cluster.down()


def etcdctl(endpoints, *args, timeout=2):
    """etcd's own client on `endpoints` (comma-separated URLs)."""
    return subprocess.run(
        ["etcdctl", "--endpoints", endpoints, "--dial-timeout", "1s",
         "--command-timeout", f"{timeout}s", *args],
        capture_output=True, text=True, timeout=timeout + 10)


def etcd_endpoint(bed, host):
    """The URL of the etcd member on bed host `host`."""
    return f"http://{bed.address(host)}:2379"


@pytest.fixture
def bed_etcd(bed):
    """(hosts, endpoints): three bed hosts (bed.up(3)) with an etcd member
    each (scripts/cluster/etcd-up.sh). The cluster is stopped when the test
    ends, before the bed checks that its hosts are empty."""
    hosts = bed.up(3)
    up = subprocess.run([str(CLUSTER / "etcd-up.sh")], env=bed.env,
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    endpoints = up.stdout.strip().removeprefix("export HVD_ETCD_ENDPOINTS=")
    assert endpoints == ",".join(etcd_endpoint(bed, h) for h in hosts), \
        up.stdout
    try:
        yield hosts, endpoints
    finally:
        subprocess.run([str(CLUSTER / "etcd-down.sh")], env=bed.env,
                       capture_output=True, timeout=60)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EtcdMember:
    """One real etcd (Debian's etcd-server) on free loopback ports, data in
    `folder`; stopped by its pid."""

    def __init__(self, folder):
        self.folder = folder
        for _ in range(3):  # a port taken between the probe and the bind
            self.port = free_port()
            self.endpoint = f"127.0.0.1:{self.port}"
            url = f"http://{self.endpoint}"
            peer = f"http://127.0.0.1:{free_port()}"
            self.log = open(folder / "etcd.log", "w")
            self.proc = subprocess.Popen(
                ["etcd", "--name", "m", "--data-dir", str(folder / "data"),
                 "--listen-client-urls", url,
                 "--advertise-client-urls", url,
                 "--listen-peer-urls", peer,
                 "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", f"m={peer}"],
                stdout=self.log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 20
            while self.proc.poll() is None and time.monotonic() < deadline:
                if self.ctl("endpoint", "health").returncode == 0:
                    return
                time.sleep(0.1)
            self.stop()
        pytest.fail(f"etcd did not start; its log: {folder / 'etcd.log'}")

    def ctl(self, *args, timeout=3):
        return subprocess.run(
            ["etcdctl", "--endpoints", self.endpoint, "--dial-timeout", "1s",
             "--command-timeout", f"{timeout}s", *args],
            capture_output=True, text=True, timeout=timeout + 10,
            errors="backslashreplace", env=dict(os.environ, ETCDCTL_API="3"))

    def keys(self, prefix):
        listed = self.ctl("get", "--prefix", "--keys-only", prefix)
        assert listed.returncode == 0, listed.stderr
        return [k for k in listed.stdout.splitlines() if k]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture
def etcd(tmp_path):
    """A one-member etcd for the test (EtcdMember)."""
    folder = tmp_path / "etcd"
    folder.mkdir()
    member = EtcdMember(folder)
    try:
        yield member
    finally:
        member.stop()
