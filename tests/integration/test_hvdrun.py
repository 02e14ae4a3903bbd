"""hvdrun in static mode, end to end with real worker processes."""

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import (HVDRUN, HVDRUN_TIME, Child, kill_session, rank_lines,
                      untimed, wait_until)
from signing import signature_headers, worker_identity_from_environment

ENV_LINE = ("echo rank=$HOROVOD_RANK size=$HOROVOD_SIZE "
            "local=$HOROVOD_LOCAL_RANK/$HOROVOD_LOCAL_SIZE "
            "cross=$HOROVOD_CROSS_RANK/$HOROVOD_CROSS_SIZE "
            "host=$HOROVOD_HOSTNAME")


def test_ranks_and_prefixed_output(hvdrun):
    result = hvdrun(["-np", "3", "sh", "-c", ENV_LINE + "; echo oops >&2"])
    assert result.returncode == 0, result.stderr
    for rank in range(3):
        assert rank_lines(result.stdout, rank) == [
            f"rank={rank} size=3 local={rank}/3 cross=0/1 host=localhost"]
        assert rank_lines(result.stderr, rank, "stderr") == ["oops"]


def test_two_hosts_give_local_and_cross_ranks(hvdrun):
    result = hvdrun(["-H", "localhost:2,127.0.0.1:2", "sh", "-c", ENV_LINE])
    assert result.returncode == 0, result.stderr
    expected = {
        0: "rank=0 size=4 local=0/2 cross=0/2 host=localhost",
        1: "rank=1 size=4 local=1/2 cross=0/2 host=localhost",
        2: "rank=2 size=4 local=0/2 cross=1/2 host=127.0.0.1",
        3: "rank=3 size=4 local=1/2 cross=1/2 host=127.0.0.1",
    }
    for rank, line in expected.items():
        assert rank_lines(result.stdout, rank) == [line]


def test_hostfile_and_np_below_slots(hvdrun, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two hosts\n127.0.0.1 slots=2\n127.0.0.2 slots=2\n")
    result = hvdrun(["-np", "3", "--hostfile", str(hostfile), "sh", "-c",
                     ENV_LINE])
    assert result.returncode == 0, result.stderr
    assert rank_lines(result.stdout, 2) == [
        "rank=2 size=3 local=0/1 cross=1/2 host=127.0.0.2"]


def test_failed_worker_stops_the_others_and_is_named(hvdrun):
    script = 'if [ "$HOROVOD_RANK" = 1 ]; then exit 3; fi; exec sleep 60'
    started = time.monotonic()
    result = hvdrun(["-np", "3", "sh", "-c", script], timeout=30)
    assert time.monotonic() - started < 20
    assert result.returncode == 3
    assert "rank 1 on host localhost exited with code 3" in result.stderr
    assert "job failed" in result.stderr


def test_killed_worker_is_reported_with_its_signal(hvdrun):
    script = 'if [ "$HOROVOD_RANK" = 0 ]; then kill -9 $$; fi; exec sleep 60'
    result = hvdrun(["-np", "2", "sh", "-c", script], timeout=30)
    assert result.returncode == 128 + signal.SIGKILL
    assert "rank 0 on host localhost was killed by signal 9" in result.stderr


def test_workers_get_default_sigpipe(hvdrun):
    # hvdrun ignores SIGPIPE itself; a worker's pipeline must still end when
    # its reader goes away.
    result = hvdrun(["-np", "1", "sh", "-c",
                     "grep SigIgn /proc/self/status; yes | head -n 1"],
                    timeout=30)
    assert result.returncode == 0, result.stderr
    ignored = int(rank_lines(result.stdout, 0)[0].split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))
    assert rank_lines(result.stdout, 0)[1] == "y"


def test_workers_start_with_no_signal_blocked(hvdrun):
    # hvdrun and its guards block the signals they read from a signalfd; a
    # worker must not inherit that, or SIGTERM and Ctrl-C never reach it.
    # (A shell would hide it: dash clears its mask at startup.)
    script = ("import signal; "
              "print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))")
    result = hvdrun(["-np", "2", sys.executable, "-c", script], timeout=30)
    assert result.returncode == 0, result.stderr
    for rank in range(2):
        assert rank_lines(result.stdout, rank) == ["[]"], result.stdout


def test_output_files(hvdrun, tmp_path):
    out = tmp_path / "logs"
    result = hvdrun(["-np", "2", "--output-filename", str(out), "sh", "-c",
                     "echo hello $HOROVOD_RANK; echo bad >&2; printf tail"])
    assert result.returncode == 0, result.stderr
    for rank in range(2):
        assert (out / f"rank.{rank}" / "stdout").read_text() == \
            f"hello {rank}\ntail\n"
        assert (out / f"rank.{rank}" / "stderr").read_text() == "bad\n"


# What horovodrun's --prefix-output-with-timestamp puts before a line:
# Python's time.asctime(), "Tue Mar  5 14:03:09 2024".
ASCTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"


def parse_asctime(text):
    """Seconds since the epoch of an asctime() text in local time."""
    return time.mktime(time.strptime(text, "%a %b %d %H:%M:%S %Y"))


@pytest.mark.parametrize("flag", ["--prefix-output-with-timestamp",
                                  "-prefix-timestamp"])
def test_output_lines_prefixed_with_the_time(hvdrun, tmp_path, flag):
    out = tmp_path / "logs"
    started = time.time()
    result = hvdrun(["-np", "2", flag, "--output-filename", str(out), "sh",
                     "-c", "echo hello $HOROVOD_RANK; echo bad >&2; "
                     "printf tail"])
    finished = time.time()
    assert result.returncode == 0, result.stderr

    def times(text, pattern, count):
        found = re.findall(f"^({ASCTIME}){pattern}$", text, re.MULTILINE)
        assert len(found) == count, (pattern, text)
        for stamp in found:
            # Read while the job ran (asctime has whole seconds).
            assert int(started) <= parse_asctime(stamp) <= finished + 1, stamp

    for rank in range(2):
        # As horovodrun: the time, then the rank prefix, no space between.
        times(result.stdout, re.escape(f"[{rank}]<stdout>:hello {rank}"), 1)
        times(result.stdout, re.escape(f"[{rank}]<stdout>:tail"), 1)
        times(result.stderr, re.escape(f"[{rank}]<stderr>:bad"), 1)
        # The files hold the time and the worker's text.
        stdout = (out / f"rank.{rank}" / "stdout").read_text()
        times(stdout, re.escape(f" hello {rank}"), 1)
        times(stdout, " tail", 1)
        assert len(stdout.splitlines()) == 2, stdout
        times((out / f"rank.{rank}" / "stderr").read_text(), " bad", 1)
    # Without the flag, no time (test_ranks_and_prefixed_output).


def test_hvdrun_lines_carry_the_time_unless_hidden(hvdrun):
    """hvdrun's own lines (its "hvdrun: ..." messages and, with --verbose,
    its log lines) start with the time by default, as horovodrun's do, and
    not with --log-without-timestamp; the workers' lines never get it."""
    job = ["-np", "2", "--verbose", "sh", "-c",
           'echo work; if [ "$HOROVOD_RANK" = 1 ]; then exit 3; fi']
    started = time.time()
    result = hvdrun(job, timeout=30)
    assert result.returncode == 3, result.stderr
    own = [l for l in result.stderr.splitlines() if "<stderr>:" not in l]
    assert any(re.search(r"\] \[driver -\] \[info\] hvdrun: rendezvous "
                         r"server on 127\.0\.0\.1:\d+$", l) for l in own), own
    assert any(l.endswith("hvdrun: rank 1 on host localhost exited with code "
                          "3; job failed (exit code 3)") for l in own), own
    for line in own:
        stamp = HVDRUN_TIME.match(line)
        assert stamp, (line, result.stderr)
        when = time.mktime(time.strptime(stamp.group(1)[:19],
                                         "%Y-%m-%d %H:%M:%S"))
        assert int(started) <= when <= time.time() + 1, line
    # Rank 1 printed before it failed (rank 0 may be stopped before it
    # does): a worker's line as it was, no time.
    assert rank_lines(result.stdout, 1) == ["work"], result.stdout

    for flag in ("--log-without-timestamp", "--log-hide-timestamp"):
        result = hvdrun([flag, *job], timeout=30)
        assert result.returncode == 3, result.stderr
        own = [l for l in result.stderr.splitlines() if "<stderr>:" not in l]
        assert "hvdrun: rank 1 on host localhost exited with code 3; job " \
            "failed (exit code 3)" in own, own
        assert any(l.startswith("[driver -] [info] hvdrun: rendezvous "
                                "server on ") for l in own), own
        assert not any(HVDRUN_TIME.search(l) for l in own), own


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose; so is one reaped since the kill.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def start_sleepers(hvdrun, tmp_path, np=2, extra=""):
    """Workers that record their pid (and a child's) and then wait."""
    script = (f"{extra} sleep 120 & echo $! > {tmp_path}/child.$HOROVOD_RANK; "
              f"echo $$ > {tmp_path}/pid.$HOROVOD_RANK; wait")
    job = hvdrun.start(["-np", str(np), "sh", "-c", script])
    files = [tmp_path / f"{kind}.{r}" for r in range(np)
             for kind in ("pid", "child")]
    # echo writes a whole line at once: a line is a complete pid.
    wait_until(lambda: all(f.exists() and f.read_text().endswith("\n")
                           for f in files), "the workers' pid files")
    return job, [int(f.read_text()) for f in files]


def test_sigkill_of_hvdrun_leaves_no_process(hvdrun, tmp_path):
    job, pids = start_sleepers(hvdrun, tmp_path)
    assert all(alive(pid) for pid in pids)
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=30)
    wait_until(lambda: not any(alive(pid) for pid in pids),
               f"the workers and their children {pids} to die with hvdrun")


# hvdrun started as a shell script's background job: SIGINT ignored.
IGNORING_SIGINT = [sys.executable, "-c", "import os, signal, sys; "
                   "signal.signal(signal.SIGINT, signal.SIG_IGN); "
                   "os.execv(sys.argv[1], sys.argv[1:])", str(HVDRUN)]


@pytest.mark.parametrize("started", ["plainly", "ignoring SIGINT"])
def test_sigint_reaches_every_worker(hvdrun, tmp_path, started):
    marker = tmp_path / "got"
    script = (f"trap 'echo $HOROVOD_RANK >> {marker}; exit 0' INT; "
              f"echo $$ > {tmp_path}/pid.$HOROVOD_RANK; "
              "while true; do sleep 0.1; done")
    args = ["-np", "2", "sh", "-c", script]
    job = hvdrun.start(args, program=None if started == "plainly" else
                       IGNORING_SIGINT)
    # Each shell sets its trap before it writes its pid file.
    wait_until(lambda: all((tmp_path / f"pid.{r}").exists()
                           for r in range(2)), "the workers' pid files")
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=30)
    got = marker.read_text().split() if marker.exists() else []
    assert sorted(got) == ["0", "1"], (job.returncode, err)
    assert "received Interrupt" in err
    assert job.returncode == 128 + signal.SIGINT


def signed_request(method, target, body=b""):
    """A client written from docs/protocol.md, run inside a worker: signed
    with the worker's own key."""
    addr = os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"]
    port = int(os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
    key, worker = worker_identity_from_environment()
    headers = signature_headers(key, method, target, body, worker=worker)
    conn = http.client.HTTPConnection(addr, port, timeout=30)
    conn.request(method, target, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def test_workers_meet_through_the_signed_rendezvous(hvdrun, tmp_path):
    worker = tmp_path / "worker.py"
    worker.write_text(textwrap.dedent(f"""
        import os, sys, json, base64
        sys.path.insert(0, {str(os.path.dirname(__file__))!r})
        from test_hvdrun import signed_request
        rank, size = os.environ["HOROVOD_RANK"], int(os.environ["HOROVOD_SIZE"])
        status, _ = signed_request("PUT", f"/v1/kv/gloo/g0/test/{{rank}}",
                                   f"worker-{{rank}}".encode())
        assert status == 200, status
        status, body = signed_request(
            "GET", f"/v1/kv/gloo?prefix=g0/test/&count={{size}}&wait_ms=20000")
        assert status == 200, (status, body)
        values = json.loads(body)["values"]
        print(sorted(base64.b64decode(v).decode() for v in values.values()))
        # A worker's key writes only the workers' scope, and acts only for
        # its own slot.
        print(signed_request("PUT", "/v1/kv/test/k", b"v")[0])
        print(signed_request("GET", "/v1/elastic/checkin?slot=x:0&after=0"
                             "&wait_ms=1&worker=99")[0])
        # A wrong key is refused.
        os.environ["HVD_WORKER_KEY"] = "wrong"
        print(signed_request("GET", "/v1/status")[0])
    """))
    result = hvdrun(["-np", "3", sys.executable, str(worker)])
    assert result.returncode == 0, result.stderr
    for rank in range(3):
        assert rank_lines(result.stdout, rank) == [
            "['worker-0', 'worker-1', 'worker-2']", "403", "403", "401"]
    # Each worker's first refusal is logged, once.
    assert result.stderr.count("refused (403)") == 3, result.stderr


def test_a_rank_that_never_calls_init_is_named(hvdrun, tmp_path):
    """Rank 2 of three never calls hvd.init() (it is still busy when the
    start timeout ends): the others' errors name it, not a store key."""
    worker = tmp_path / "worker.py"
    worker.write_text(textwrap.dedent("""
        import os, time
        import hvd
        if os.environ["HOROVOD_RANK"] == "2":
            time.sleep(120)  # ended by hvdrun when the job fails
        try:
            hvd.init()
        except hvd.HorovodInternalError as e:
            print(e)
            raise SystemExit(1)  # the job fails, and rank 2 is stopped
    """))
    result = hvdrun(["-np", "3", "--start-timeout", "2", sys.executable,
                     str(worker)], timeout=60)
    # The first to fail ends the job, which may stop the other before it
    # prints.
    errors = [l for rank in (0, 1) for l in rank_lines(result.stdout, rank)]
    assert errors, result.stdout + result.stderr
    for line in errors:
        assert "Gloo context g0/global/: rank 2 has not reached hvd.init() " \
               "in 2 s" in line, result.stdout + result.stderr


def test_keys_are_in_the_environment_not_on_command_lines(hvdrun, tmp_path):
    """Each worker has a key of its own, in its environment; the job's
    secret stays with hvdrun."""
    job, pids = start_sleepers(hvdrun, tmp_path)
    keys = []
    for worker in pids[::2]:  # each rank's shell (then its child)
        with open(f"/proc/{worker}/environ", "rb") as f:
            env = dict(item.split(b"=", 1)
                       for item in f.read().split(b"\0") if item)
        assert b"HVD_SECRET_KEY" not in env
        keys.append(env[b"HVD_WORKER_KEY"])
    assert all(len(key) == 64 for key in keys) and len(set(keys)) == 2
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                line = f.read()
            for key in keys:
                assert key not in line, f"a key on the command line of {pid}"
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    job.send_signal(signal.SIGTERM)
    job.communicate(timeout=30)


@pytest.mark.parametrize("args, message", [
    (["-np", "0", "true"], "--num-proc"),
    (["-np", "4", "-H", "localhost:2", "true"], "needs more slots"),
    (["-H", "a:x", "true"], "slots of 'a'"),
    (["-np", "2"], "no command to run"),
    (["--log-level", "loud", "-np", "1", "true"], "not a log level"),
    (["--cycle-time-ms", "-1", "-np", "1", "true"], "--cycle-time-ms"),
])
def test_bad_flags_are_clear_errors(hvdrun, args, message):
    result = hvdrun(args)
    assert result.returncode == 2
    assert message in result.stderr, result.stderr


def test_help_lists_the_flags(hvdrun):
    result = hvdrun(["--help"])
    assert result.returncode == 0
    for flag in ("--num-proc", "--hosts", "--hostfile", "--network-interface",
                 "--output-filename", "--ssh-port", "--ssh-identity-file",
                 "--start-timeout", "--gloo-timeout-seconds",
                 "--fusion-threshold-mb", "--cycle-time-ms",
                 "--cache-capacity", "--timeline-filename"):
        assert flag in result.stdout


def test_a_remote_host_that_never_answers_ends_the_launch(tmp_path):
    """Rank 1's host never answers ssh (the fake ssh on PATH hangs, past
    even the ConnectTimeout a real one would honour). The host check before
    the launch kills it --start-timeout plus 2 s later and the job fails
    naming the host, before any worker started. Runs in
    a network namespace of its own with loopback and one end of a veth pair
    (the address the rendezvous server binds: a job across machines cannot
    use loopback), so the remote host's name resolves nowhere and nothing
    leaves the machine."""
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "ssh.calls"
    (fake / "ssh").write_text(
        f"#!/bin/sh\necho \"$$ $*\" >> {calls}\nexec sleep 600\n")
    (fake / "ssh").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    args = ["-np", "2", "-H", "localhost:1,unreachable-host:1",
            "--network-interface", "v0", "--start-timeout", "3",
            sys.executable, "-c", "import hvd; hvd.init(); print('joined')"]
    started = time.monotonic()
    job = Child(subprocess.Popen(
        ["unshare", "--net", "sh", "-c",
         "ip link set lo up && ip link add v0 type veth peer name v1 && "
         "ip addr add 10.99.0.1/24 dev v0 && ip link set v0 up && "
         'exec "$0" "$@"',
         str(HVDRUN), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, errors="backslashreplace", env=env,
        start_new_session=True), "hvdrun in a network namespace")
    try:
        result = job.finish(timeout=60)
    finally:
        if job.poll() is None:
            kill_session(job.proc)
    took = time.monotonic() - started
    assert result.returncode != 0, result.stderr
    assert "joined" not in result.stdout
    # 3 s start timeout and the check's 2 s margin.
    assert took < 10, (took, result.stderr)
    assert ("hvdrun: cannot reach host unreachable-host over ssh: no answer "
            "within 3 s (--start-timeout); ssh was killed") in \
        untimed(result.stderr), result.stderr
    assert result.returncode == 1, result.stderr
    pid, line = calls.read_text().splitlines()[0].split(" ", 1)
    assert "ConnectTimeout=3" in line and "BatchMode=yes" in line, line
    assert "unreachable-host" in line.split(), line
    wait_until(lambda: not alive(int(pid)), "the hung ssh to be stopped",
               timeout=10)


def test_version_and_check_build_tell_what_the_python_queries_tell(hvdrun):
    """hvdrun --version / -cb and hvd's build queries (Horovod's names)
    describe the same build."""
    facts = json.loads(subprocess.run(
        [sys.executable, "-c",
         "import json, hvd, hvd.torch as ht; print(json.dumps(dict("
         "version=hvd.__version__, torch_version=ht.__version__, "
         "gloo=hvd.gloo_built(), gloo_enabled=ht.gloo_enabled(), "
         "mpi=hvd.mpi_built(), mpi_enabled=ht.mpi_enabled(), "
         "nccl=hvd.nccl_built(), cuda=ht.cuda_built(), rocm=ht.rocm_built(), "
         "ddl=ht.ddl_built(), ccl=ht.ccl_built())))"],
        capture_output=True, text=True, timeout=120, check=True).stdout)
    version = hvdrun(["--version"])
    assert version.returncode == 0, version.stderr
    assert version.stdout == facts["version"] + "\n"
    assert facts["torch_version"] == facts["version"]
    report = hvdrun(["-cb"])
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith(f"hvd v{facts['version']}:"), report.stdout

    def line(name, built):
        return f"    [{'X' if built else ' '}] {name}\n"
    assert facts["gloo"] and facts["gloo_enabled"]
    assert not facts["mpi"] and not facts["mpi_enabled"]
    for name, built in [("PyTorch", True), ("Gloo", facts["gloo"]),
                        ("MPI", facts["mpi"]), ("NCCL", facts["nccl"] != 0),
                        ("DDL", facts["ddl"]), ("CCL", facts["ccl"])]:
        assert line(name, built) in report.stdout, (name, report.stdout)
    assert isinstance(facts["nccl"], int)
    # CUDA tensors come with the NCCL backend, which the build found or not.
    assert facts["cuda"] is (facts["nccl"] != 0) and facts["rocm"] is False


def test_mpi_threads_supported_raises_as_horovod_does_without_mpi():
    result = subprocess.run(
        [sys.executable, "-c",
         "import hvd.torch as hvd\n"
         "try:\n    hvd.mpi_threads_supported()\n"
         "except ValueError as e:\n    print('ValueError:', e)\n"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ValueError: MPI is not enabled"), \
        result.stdout
