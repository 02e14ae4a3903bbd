"""hvdrun's etcd rendezvous (--rendezvous-backend etcd) on the test bed:
an elastic job of four workers over real ssh on two bed hosts, etcd as
three members on three other hosts (scripts/cluster/etcd-up.sh), hvdrun in
the root namespace. etcd loses one member; loses its quorum for longer
than hvdrun's lease, then gets it back; loses a member while a worker is
killed, so that the new generation meets through the two left. Every
such job ends with the model a fault-free run computes, each step's samples
applied exactly once (test_elastic's check_consistent_finish), and no key
of the job left in etcd. A job whose etcd lost its quorum while a worker
died fails after the elastic timeout, naming etcd."""

import json
import os
import re
import signal
import subprocess
import time

from conftest import Child, etcd_endpoint, etcdctl, rank_lines, wait_until
from test_bed_jobs import hosts_arg
from test_elastic import Scenario, check_consistent_finish

LEASE = 5  # hvdrun's lease on a job's lead, in seconds (docs/etcd.md)


def batches(s):
    return [r for r in s.records() if r["event"] == "batch"]


def start_job(bed, hvdrun, tmp_path, endpoints, job, extra=()):
    """The job on two new hosts, once each of its four workers trained;
    returns (Child, Scenario, worker hosts). About 30 s of training: room
    for the faults, which never wait for the job to end."""
    workers = [bed.ctl("add")[0] for _ in range(2)]
    s = Scenario(tmp_path, "", epochs=10, batches=20, sleep=0.1)
    child = hvdrun.start(["--rendezvous-backend", "etcd",
                          "--rendezvous-endpoint", endpoints,
                          "--job-id", job, "-np", "4", "--min-np", "2",
                          *extra, "-H", hosts_arg(workers), *s.command()],
                         cwd=tmp_path)
    wait_until(lambda: child.poll() is not None or
               len({r["slot"] for r in batches(s)}) == 4,
               "every worker training", timeout=90)
    assert child.poll() is None, child.finish().stderr
    return child, s, workers


def finish(child, s, endpoints, job, size):
    """hvdrun's result, once the job ended well: exit 0, the exact model on
    `size` workers, nothing left under the job's prefix in etcd."""
    result = child.finish(timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, size)

    def listing():
        got = etcdctl(endpoints, "get", "--prefix", "--keys-only",
                      f"/hvd/jobs/{job}/")
        return got if got.returncode == 0 else None
    # A member's crash may leave etcdctl's first call to time out.
    listed = wait_until(listing, "etcd listing the job's keys", timeout=20)
    assert listed.stdout.strip() == "", listed.stdout
    return result


def raft_leader(bed, hosts):
    """The host whose member leads etcd's raft now."""
    urls = {etcd_endpoint(bed, h): h for h in hosts}
    status = etcdctl(",".join(urls), "endpoint", "status", "-w", "json")
    assert status.returncode == 0, status.stderr
    for member in json.loads(status.stdout):
        if member["Status"]["leader"] == \
                member["Status"]["header"]["member_id"]:
            return urls[member["Endpoint"]]
    raise AssertionError(f"no member leads: {status.stdout}")


def test_one_member_crashed_changes_nothing(bed, bed_etcd, hvdrun,
                                            tmp_path):
    hosts, _ = bed_etcd
    # hvdrun and every worker call the first endpoint first: the member
    # that leads etcd's raft goes there, so that its crash makes hvdrun's
    # lease fail over while etcd elects another leader.
    leader = raft_leader(bed, hosts)
    endpoints = ",".join(etcd_endpoint(bed, h) for h in
                         [leader, *(h for h in hosts if h != leader)])
    child, s, _ = start_job(bed, hvdrun, tmp_path, endpoints, "one")
    bed.ctl("crash", leader)
    crashed = time.monotonic()
    result = finish(child, s, endpoints, "one", 4)
    # Long enough for a lease that lapsed to be noticed.
    assert time.monotonic() - crashed > 2 * LEASE, result.stderr
    assert "lost the lead" not in result.stderr, result.stderr


def test_quorum_lost_past_the_lease_the_workers_train_on(
        bed, bed_etcd, hvdrun, tmp_path):
    hosts, endpoints = bed_etcd
    child, s, _ = start_job(bed, hvdrun, tmp_path, endpoints, "quorum")
    bed.ctl("crash", hosts[0])
    bed.ctl("crash", hosts[1])
    child.wait_for_line(lambda l: "hvdrun: lost the lead of job 'quorum'"
                        in l, "hvdrun losing the lead", stream="stderr",
                        timeout=30)
    # Between resets the workers need no etcd: two more steps each.
    before = len(batches(s))
    wait_until(lambda: len(batches(s)) >= before + 8,
               "the workers training while etcd has no quorum")
    bed.ctl("etcd", hosts[0])
    bed.ctl("etcd", hosts[1])
    child.wait_for_line(lambda l: "hvdrun: leads job 'quorum' in etcd again"
                        in l, "hvdrun leading again", stream="stderr",
                        timeout=30)
    finish(child, s, endpoints, "quorum", 4)


def kill_worker(bed, s, host):
    """SIGKILLs the worker of slot host:0: it names its pid in its log's
    name, and the bed says that pid runs on `host`."""
    (log,) = s.log.glob(f"{host}:0.*.jsonl")
    victim = int(log.name.split(".")[-2])
    assert victim in bed.job_pids(host)
    os.kill(victim, signal.SIGKILL)


def test_quorum_lost_while_a_change_is_needed_fails_naming_etcd(
        bed, bed_etcd, hvdrun, tmp_path):
    """etcd has no quorum and a worker dies: the survivors cannot meet
    (their next generation's rendezvous is in etcd), so once the elastic
    timeout passes without quorum the job fails, saying etcd is why."""
    hosts, endpoints = bed_etcd
    child, s, (a, b) = start_job(bed, hvdrun, tmp_path, endpoints, "stuck",
                                 extra=("--elastic-timeout", "20"))
    bed.ctl("crash", hosts[0])
    bed.ctl("crash", hosts[1])
    child.wait_for_line(lambda l: "hvdrun: lost the lead of job 'stuck'"
                        in l, "hvdrun losing the lead", stream="stderr",
                        timeout=30)
    kill_worker(bed, s, b)
    killed = time.monotonic()
    result = child.finish(timeout=120)
    assert result.returncode == 1, result.stderr
    # Not before the elastic timeout: etcd could have come back until then.
    assert time.monotonic() - killed >= 20, result.stderr
    for rank in (0, 1):
        assert ("could not rejoin the job within the elastic timeout "
                "(20 s); the last attempt: connecting Gloo context g2/") \
            in "\n".join(rank_lines(result.stderr, rank, "stderr")), \
            result.stderr
    assert (f"hvdrun: etcd at {endpoints} stopped answering this hvdrun "
            "(its lead lapsed ") in result.stderr, result.stderr
    assert "the workers need etcd to form a generation" in result.stderr


def test_a_worker_killed_while_a_member_is_down_recovers_through_etcd(
        bed, bed_etcd, hvdrun, tmp_path):
    hosts, endpoints = bed_etcd
    child, s, (a, b) = start_job(bed, hvdrun, tmp_path, endpoints, "kill")
    # The first endpoint: every worker's client tries it first.
    bed.ctl("crash", hosts[0])
    # etcd's own watch, on the two members left, sees the job's Gloo keys.
    survivors = ",".join(etcd_endpoint(bed, h) for h in hosts[1:])
    watch = Child(subprocess.Popen(
        ["etcdctl", "--endpoints", survivors, "watch", "--prefix",
         "/hvd/jobs/kill/gloo/"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, errors="backslashreplace"),
        "etcdctl watch")
    try:
        kill_worker(bed, s, b)
        watch.wait_for_line(
            lambda l: re.match(r"/hvd/jobs/kill/gloo/g[1-9]\d*/", l),
            "a later generation's rendezvous in etcd", timeout=60)
    finally:
        watch.proc.kill()
        watch.proc.wait(timeout=10)
    result = finish(child, s, endpoints, "kill", 2)
    assert f"host {b} blacklisted" in result.stderr, result.stderr
    assert {r["slot"] for r in s.done()} == {f"{a}:0", f"{a}:1"}
