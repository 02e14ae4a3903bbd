"""Workers on the leader's own machine outlive its process too
(--adopt-grace-seconds with the etcd backend; issue 32): each runs under a
guard that is not hvdrun's child (process/guard.h, kAdoptableHere). When
the leading hvdrun is SIGKILLed, a standby on the same machine adopts them
without ssh and the job trains on with no reset; with no standby they
stop once the grace runs out. One machine and a one-member etcd: no bed.
"""

import json
import os
import time

from conftest import wait_until
from test_elastic import Scenario
from test_adopt_bed import socket_name
from test_etcd_driver_state import opened
from test_status import get, status_url
from test_takeover_bed import check_adopted_finish


def etcd_args(etcd, tmp_path, job, grace):
    return ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            etcd.endpoint, "--job-id", job, "--job-secret-file",
            str(tmp_path / "job.secret"), "--adopt-grace-seconds",
            str(grace)]


def training(s, slots):
    return len({r["slot"] for r in s.records()
                if r["event"] == "batch"}) == slots


def alive(pid):
    """Whether `pid` runs (a zombie has ended: it waits for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def worker_pids(etcd, tmp_path, job):
    """{worker id: pid} as the leader saved them in etcd."""
    secret = (tmp_path / "job.secret").read_text().strip()

    def saved():
        value = opened(etcd, secret, f"/hvd/jobs/{job}/state")
        if value is None:
            return None
        workers = json.loads(value)["workers"]
        if not workers or not all(w["pid"] for w in workers):
            return None
        return {w["id"]: w["pid"] for w in workers}
    return wait_until(saved, "the workers' pids in etcd")


def check_page_right_after_takeover(url, saved):
    """The new leader's status.json, read once as soon as it says it took
    the job over: every adopted worker is a rank there already, from the
    state the last leader saved, not from a report it has yet to get."""
    code, body = get(url, "/status.json")
    assert code == 200, body
    status = json.loads(body)
    ranks = status["ranks"]
    assert sorted(r["rank"] for r in ranks) == [0, 1, 2, 3], body
    assert {r["slot"] for r in ranks} == {
        "localhost:0", "localhost:1", "127.0.0.1:0", "127.0.0.1:1"}, body
    assert all(r["adopted_ms"] is not None for r in ranks), body
    assert {r["worker"]: r["worker_pid"] for r in ranks} == saved, body
    newest = status["generations"][-1]
    assert newest["generation"] == 1 and newest["taken_over"], body
    assert status["job"]["generation"] == 1, body


def test_a_standby_adopts_the_killed_leaders_own_workers(
        hvdrun, etcd, tmp_path):
    s = Scenario(tmp_path, "", epochs=6, batches=20, sleep=0.1, print=True)
    args = [*etcd_args(etcd, tmp_path, "here", 60), "-np", "4",
            "--min-np", "2", "-H", "localhost:2,127.0.0.1:2", *s.command()]
    leader = hvdrun.start(args, cwd=tmp_path)
    wait_until(lambda: leader.poll() is not None or training(s, 4),
               "every worker training", timeout=90)
    assert leader.poll() is None, leader.finish().stderr
    saved = worker_pids(etcd, tmp_path, "here")
    pids = saved.values()
    standby = hvdrun.start(["--standby", *args], cwd=tmp_path)
    url = status_url(standby)
    standby.wait_for_line(
        lambda l: f"led by hvdrun pid {leader.proc.pid} on " in l,
        "the standby waiting", stream="stderr", timeout=30)
    leader.proc.kill()
    leader.proc.wait(timeout=10)
    killed = time.time()
    # The leader's workers were not its children's children: they live.
    assert all(alive(pid) for pid in pids), pids
    standby.wait_for_line(
        lambda l: "hvdrun: took job 'here' over at generation 1: "
        "adopting 4 of 4 workers" in l, "the standby taking over",
        stream="stderr", timeout=30)
    took_over = time.time()
    check_page_right_after_takeover(url, saved)
    check_adopted_finish(standby.finish(timeout=180), s, killed, took_over)


def test_the_leaders_own_workers_stop_when_nobody_adopts_them(
        hvdrun, etcd, tmp_path):
    s = Scenario(tmp_path, "", epochs=50, batches=20, sleep=0.1)
    leader = hvdrun.start(
        [*etcd_args(etcd, tmp_path, "orphans", 3), "-np", "2",
         "-H", "localhost:2", *s.command()], cwd=tmp_path)
    wait_until(lambda: leader.poll() is not None or training(s, 2),
               "both workers training", timeout=90)
    saved = worker_pids(etcd, tmp_path, "orphans")
    ids, pids = saved.keys(), saved.values()
    leader.proc.kill()
    leader.proc.wait(timeout=10)
    killed = time.time()
    # Within the grace they train on, then their guards stop them.
    wait_until(lambda: [r for r in s.records() if r["event"] == "batch"
                        and r["time"] > killed + 0.5],
               "the workers training within the grace")
    wait_until(lambda: not any(alive(pid) for pid in pids),
               "the workers stopped after the grace", timeout=40)
    assert time.time() - killed >= 3
    # Their guards take their sockets with them, as they exit just after
    # their workers.
    folder = f"/tmp/hvd-adopt-{os.getuid()}"
    sockets = [os.path.join(folder, socket_name("orphans", worker_id))
               for worker_id in ids]
    wait_until(lambda: not any(os.path.exists(path) for path in sockets),
               f"the guards to remove their sockets {sockets}", timeout=20)
