"""A standby hvdrun takes a job over when its leader dies (--standby,
--adopt-grace-seconds, the etcd backend; issue 32): an elastic job of four
workers over real ssh on two bed hosts, etcd as three members on three
others, the leader and its standby in the root namespace. The leader is
killed mid-training; the standby leads once the leader's lease ends,
rebuilds the driver from the state in etcd and adopts every worker. The
workers train on throughout: the job ends with the model a fault-free run
computes, each step's samples applied exactly once, and no reset."""

import json
import subprocess
import time

from conftest import (HVDRUN, Child, etcdctl, rank_lines, untimed,
                      wait_until)
from test_bed_jobs import hosts_arg
from test_elastic import Scenario, check_consistent_finish
from test_status import get, status_url


def batches(s):
    return [r for r in s.records() if r["event"] == "batch"]


def test_a_standby_takes_a_killed_leaders_job_over_without_a_reset(
        bed, bed_etcd, hvdrun, tmp_path):
    _, endpoints = bed_etcd
    workers = [bed.ctl("add")[0] for _ in range(2)]
    s = Scenario(tmp_path, "", epochs=8, batches=20, sleep=0.1, print=True)
    args = ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            endpoints, "--job-id", "takeover", "--job-secret-file",
            str(tmp_path / "job.secret"), "--adopt-grace-seconds", "60",
            "-np", "4", "--min-np", "2", "-H", hosts_arg(workers),
            *s.command()]
    leader = hvdrun.start(args, cwd=tmp_path)
    wait_until(lambda: leader.poll() is not None or
               len({r["slot"] for r in batches(s)}) == 4,
               "every worker training", timeout=90)
    assert leader.poll() is None, leader.finish().stderr
    standby = hvdrun.start(["--standby", *args], cwd=tmp_path)
    standby.wait_for_line(
        lambda l: "hvdrun: standby for job 'takeover'" in l and
        f"led by hvdrun pid {leader.proc.pid} on " in l,
        "the standby waiting", stream="stderr", timeout=30)
    leader.proc.kill()
    leader.proc.wait(timeout=10)
    killed = time.time()
    standby.wait_for_line(
        lambda l: "hvdrun: took job 'takeover' over at generation 1: "
        "adopting 4 of 4 workers" in l, "the standby taking over",
        stream="stderr", timeout=30)
    took_over = time.time()
    # The standby's status says from whom it took the job and when each
    # phase ended: detect (the lease gone), elect, rebuild, adopt.
    url = status_url(standby)

    def takeover():
        code, body = get(url, "/status.json")
        assert code == 200, body
        took = json.loads(body)["leader"].get("takeover", {})
        return took if "adopted_ms" in took else None
    took = wait_until(takeover, "the takeover on the standby's status")
    assert took["from"].startswith(f"hvdrun pid {leader.proc.pid} on "), took
    assert (took["adopted"], took["workers"], took["generation"]) == \
        (4, 4, 1), took
    assert killed * 1000 < took["detected_ms"] <= took["elected_ms"] <= \
        took["rebuilt_ms"] <= took["adopted_ms"] <= took_over * 1000, \
        (killed, took, took_over)
    result = standby.finish(timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
    records = s.records()
    assert not [r for r in records if r["event"] == "reset"], \
        [r for r in records if r["event"] == "reset"]
    # The workers trained while no hvdrun led.
    assert [r for r in records if r["event"] == "batch" and
            killed < r["time"] < took_over], (killed, took_over)
    # The adopted workers' output reached the standby, under their ranks.
    for rank in range(4):
        assert "done" in rank_lines(result.stdout, rank), result.stdout
    assert ("hvdrun: every rank of the last generation finished; job "
            "succeeded after 0 resets") in untimed(result.stderr), \
        result.stderr
    listed = etcdctl(endpoints, "get", "--prefix", "--keys-only",
                     "/hvd/jobs/takeover/")
    assert listed.returncode == 0 and listed.stdout.strip() == "", \
        listed.stdout


def test_a_crash_of_the_leaders_host_that_ran_workers_is_a_failure(
        bed, bed_etcd, hvdrun, tmp_path):
    """The leader runs on a bed host beside two of the six workers, and
    that host crashes (ctl.sh crash: every process killed, its link
    gone). The standby adopts the four workers of the other hosts; the two
    that died with the leader are failed workers: their host is
    blacklisted and the survivors go on from the last commit, with the
    model exact."""
    _, endpoints = bed_etcd
    leader_host, *workers = [bed.ctl("add")[0] for _ in range(3)]
    s = Scenario(tmp_path, "", epochs=8, batches=20, sleep=0.1)
    args = ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            endpoints, "--job-id", "crash", "--job-secret-file",
            str(tmp_path / "job.secret"), "--adopt-grace-seconds", "60",
            "-np", "6", "--min-np", "2",
            "-H", hosts_arg([leader_host, *workers]), *s.command()]
    leader = Child(subprocess.Popen(
        ["ssh", leader_host, str(HVDRUN), *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=tmp_path), "the leader")
    try:
        wait_until(lambda: leader.proc.poll() is not None or
                   len({r["slot"] for r in batches(s)}) == 6,
                   "every worker training", timeout=90)
        assert leader.proc.poll() is None, leader.text("stderr")
        standby = hvdrun.start(["--standby", *args], cwd=tmp_path)
        standby.wait_for_line(
            lambda l: "hvdrun: standby for job 'crash'" in l,
            "the standby waiting", stream="stderr", timeout=30)
        bed.ctl("crash", leader_host)
        standby.wait_for_line(
            lambda l: "hvdrun: took job 'crash' over at generation 1: "
            "adopting 4 of 6 workers" in l, "the standby taking over",
            stream="stderr", timeout=40)
        result = standby.finish(timeout=180)
    finally:
        leader.proc.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
    assert {r["slot"].split(":")[0] for r in s.done()} == set(workers)
    assert ("could not be adopted: it ran beside the last leader, or "
            "without a guard that waits for one") in result.stderr, \
        result.stderr
    assert f"host {leader_host} blacklisted" in result.stderr, result.stderr
