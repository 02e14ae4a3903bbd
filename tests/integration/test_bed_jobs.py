"""Real jobs over real ssh on the test bed (scripts/cluster/): hosts are
network namespaces with their own sshd, and hvdrun runs in this (root)
namespace, which has no worker. Static jobs with every op and the
environment, hvdrun or an ssh link killed, elastic host changes, a host
crash, and partitions that heal."""

import glob
import json
import os
import re
import signal

from conftest import (ROOT, rank_lines, shm_segments, wait_until,
                      wait_until_no_new_segments)
from test_elastic import Scenario, check_consistent_finish

WORKERS = ROOT / "tests" / "integration" / "workers"
PYTHON = "/usr/bin/python3"


def hosts_arg(hosts, slots=2):
    return ",".join(f"{h}:{slots}" for h in hosts)


def test_static_job_on_three_hosts_runs_every_op_with_the_environment(
        bed, hvdrun, tmp_path):
    hosts = bed.up(3)
    python_path = os.environ.get("PYTHONPATH", "")
    env = dict(os.environ, PYTHONPATH=f"/opt/hvd-test-site:{python_path}",
               LD_LIBRARY_PATH="/opt/hvd-test-lib",
               HVD_TEST_USER_VARIABLE="a b'c\"$HOME\nsecond line",
               HVD_TEST_EXPORTED_BY_NAME="from hvdrun",
               HOSTNAME="the-launching-host",
               # The shared-memory stage in small chunks (and its log line).
               HVD_SHM_CHUNK_BYTES="4096", HOROVOD_LOG_LEVEL="debug")
    result = hvdrun(["-H", hosts_arg(hosts), "-x", "HVD_TEST_EXPORTED=x=1",
                     "-x", "HVD_TEST_EXPORTED_BY_NAME", PYTHON,
                     str(WORKERS / "bed_worker.py")],
                    timeout=180, env=env, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for rank in range(6):
        lines = rank_lines(result.stdout, rank)
        assert sum(bool(re.fullmatch(rf"rank {rank}/6: \d+ checks passed", l))
                   for l in lines) == 2, output
        report = json.loads(next(l[4:] for l in lines if l.startswith("ENV ")))
        # Ranks fill hosts in order, two each, and run there.
        assert report["host"] == hosts[rank // 2]
        assert report["env"]["HOROVOD_HOSTNAME"] == hosts[rank // 2]
        assert report["cwd"] == str(tmp_path)
        # The host's own name resolves to 127.0.1.1 (Debian's /etc/hosts),
        # yet Gloo connected across hosts: workers bind to the address that
        # reaches the rendezvous server, not to their name's.
        assert report["own_name"] == "127.0.1.1"
        got = report["env"]
        for name in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH",
                     "HVD_TEST_USER_VARIABLE"):
            assert got[name] == env[name], (name, got[name])
        assert got["HVD_TEST_EXPORTED"] == "x=1"
        # The worker's own key reached it, and left the environment its
        # script sees; the job's secret never came.
        assert report["given_key"] and got["HVD_WORKER_KEY"] is None
        assert got["HVD_SECRET_KEY"] is None
        assert got["HVD_TEST_EXPORTED_BY_NAME"] == "from hvdrun"
        # What describes the launching session is the remote login's own.
        assert got["HOSTNAME"] != "the-launching-host"
        assert got["SSH_CONNECTION"] and \
            got["SSH_CONNECTION"].split()[2] == bed.address(hosts[rank // 2])
    # Each host's two ranks went through shared memory (at every init),
    # and across hosts over Gloo.
    for rank in range(6):
        assert re.search(rf"\[{rank}\]<stderr>:.*hierarchical collectives "
                         r"through", result.stderr), result.stderr


def start_steady_job(hvdrun, hosts, tmp_path, extra=()):
    """A static job on `hosts` that trains until stopped; returns the Child
    once every rank has stepped."""
    child = hvdrun.start(["--verbose", *extra, "-H", hosts_arg(hosts), PYTHON,
                          str(WORKERS / "forever_worker.py")], cwd=tmp_path)
    child.wait_for_lines(lambda l: "stepping" in l, "every rank stepping",
                         count=2 * len(hosts), timeout=90)
    return child


def test_sigkill_of_hvdrun_leaves_no_process_on_any_host(bed, hvdrun,
                                                         tmp_path):
    """Also hvdrun's -p and -i on a real job."""
    hosts = bed.up(2)
    segments = shm_segments()
    # Through the bed's second sshd port, which takes only its second key.
    child = start_steady_job(hvdrun, hosts, tmp_path, extra=[
        "-p", "2222", "-i", str(bed.dir / "alt_id_ed25519")])
    assert all(bed.job_pids(h) for h in hosts)
    os.kill(child.pid, signal.SIGKILL)
    # The local guards see the driver gone and close what the remote
    # guards read; those stop their workers.
    bed.wait_until_empty(timeout=5)
    # The bed's hosts share this /dev/shm: no host left a segment.
    wait_until_no_new_segments(segments)


def test_a_dropped_ssh_connection_stops_its_remote_worker(bed, hvdrun,
                                                          tmp_path):
    hosts = bed.up(2)
    child = start_steady_job(hvdrun, hosts, tmp_path)
    # hvdrun --verbose names each slot's guard; the guard's child is ssh.
    guard = int(re.search(rf"slot {hosts[1]}:1 \(rank 3\) is pid (\d+)",
                          child.text("stderr")).group(1))
    ssh = int(open(f"/proc/{guard}/task/{guard}/children").read().split()[0])
    os.kill(ssh, signal.SIGKILL)
    result = child.finish(timeout=60)
    # A static job fails with that rank (its guard dies as ssh did); the
    # remote guard saw its input end; nothing is left anywhere.
    assert result.returncode == 128 + signal.SIGKILL, result.stderr
    assert f"rank 3 on host {hosts[1]} was killed by signal 9" in \
        result.stderr
    bed.wait_until_empty(timeout=5)


def test_elastic_hosts_join_and_leave_and_a_host_crashes(bed, hvdrun,
                                                         tmp_path):
    hosts = bed.up(4)
    a, b, c, d = hosts
    # Host d's workers may start after the last epoch: the job waits. Host
    # a leaves (epoch 4) only once b's and c's workers train: a has the
    # only workers that hold the state until then.
    s = Scenario(tmp_path, f"{a}:2\n", epochs=6, batches=10, sleep=0.1,
                 hold_until_size=4, hold_before_epoch={"4": 6},
                 discovery={"1": f"{a}:2\n{b}:2\n{c}:2\n",
                            "4": f"{b}:2\n{c}:2\n{d}:2\n"})
    child = hvdrun.start(["-np", "2", "--min-np", "2",
                          "--host-discovery-script", str(s.discover),
                          "--discovery-interval", "0.3", *s.command()],
                         cwd=tmp_path)
    # Once three hosts train, host c loses power.
    wait_until(lambda: child.poll() is not None or any(
        r["event"] == "batch" and r["size"] == 6 for r in s.records()),
        "six workers training", timeout=90)
    assert child.poll() is None, child.finish().stderr
    bed.ctl("crash", c)
    result = child.finish(timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"host {c} blacklisted" in result.stderr
    # Rank 0's host a left; the job ended on b and d.
    check_consistent_finish(s, 4)
    assert {r["slot"].split(":")[0] for r in s.done()} == {b, d}


def pids_in_logs(directory, host):
    """The pids that wrote logs as a slot of `host` (<slot>.<pid>.jsonl)."""
    return {int(path.rsplit(".", 2)[1])
            for path in glob.glob(f"{directory}/{host}:*.jsonl")}


def test_partition_then_heal_keeps_the_model_exact(bed, hvdrun, tmp_path):
    """Host b goes silent while its first worker is inside a step. The
    survivors go on without it; when the link comes back (and b's cooldown
    has ended), b's old processes, kept alive here by a long silence bound,
    must not rejoin: b gets new workers, and the model is exact."""
    hosts = bed.up(2)
    a, b = hosts
    s = Scenario(tmp_path, "", epochs=6, batches=10, sleep=0.1,
                 exits=[{"slot": f"{b}:0", "epoch": 1, "batch": 1,
                         "how": "pause"}])
    env = dict(os.environ, HVD_REMOTE_SILENCE_SECONDS="60")
    child = hvdrun.start(["-np", "4", "--min-np", "2", "-H", hosts_arg(hosts),
                          "--blacklist-cooldown-range", "1", "1",
                          *s.command()], cwd=tmp_path, env=env)
    wait_until(lambda: (s.log / "paused").exists(), "b:0 to pause",
               timeout=90)
    partitioned = pids_in_logs(s.log, b)
    bed.ctl("partition", b)
    child.wait_for_line(lambda l: f"host {b} blacklisted" in l,
                        "the partition to be detected", stream="stderr",
                        timeout=30)
    bed.ctl("heal", b)
    (s.log / "resume").write_text("")
    result = child.finish(timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"host {b} is back" in result.stderr or "generation 3" in \
        result.stderr, result.stderr
    check_consistent_finish(s, 4)
    assert {r["slot"] for r in s.done()} == {f"{a}:0", f"{a}:1", f"{b}:0",
                                             f"{b}:1"}
    # b's slots were finished by new processes, never by the cut-off ones.
    finished_b = {int(path.rsplit(".", 2)[1])
                  for path in glob.glob(f"{s.log}/{b}:*.jsonl")
                  if any('"done"' in line for line in open(path))}
    assert len(finished_b) == 2 and not finished_b & partitioned, \
        (finished_b, partitioned)


def test_partition_trains_every_sample_exactly_once(bed, hvdrun, tmp_path):
    hosts = bed.up(2)
    worker = WORKERS / "elastic_sampler_worker.py"
    child = hvdrun.start(["-np", "4", "--min-np", "2", "-H", hosts_arg(hosts),
                          PYTHON, str(worker), str(tmp_path),
                          f"{hosts[1]}:0", "3", "pause"], cwd=tmp_path)
    wait_until(lambda: (tmp_path / "paused").exists(), "the victim to pause",
               timeout=90)
    bed.ctl("partition", hosts[1])
    result = child.finish(timeout=120)
    # Healed only now: the partitioned workers end by themselves (their
    # guards heard nothing for 5 s), and the bed fixture checks that.
    bed.ctl("heal", hosts[1])
    (tmp_path / "resume").write_text("")
    assert result.returncode == 0, result.stdout + result.stderr
    committed = {0: [], 1: []}
    for path in glob.glob(str(tmp_path / "*.jsonl")):
        records = [json.loads(line) for line in open(path)
                   if line.endswith("\n")]
        for record, following in zip(records, records[1:] + [None]):
            if record["event"] == "step" and following and \
                    following["event"] == "commit":
                committed[record["epoch"]].extend(record["indices"])
    for epoch, indices in committed.items():
        assert sorted(indices) == list(range(96)), (epoch, sorted(indices))
