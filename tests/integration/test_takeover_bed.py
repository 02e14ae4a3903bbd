"""A standby hvdrun takes a job over when its leader dies (--standby,
--adopt-grace-seconds, the etcd backend; issue 32): an elastic job of four
workers over real ssh on two bed hosts, etcd as three members on three
others, the leader and its standby in the root namespace. The leader is
killed mid-training; the standby leads once the leader's lease ends,
rebuilds the driver from the state in etcd and adopts every worker. The
workers train on throughout: the job ends with the model a fault-free run
computes, each step's samples applied exactly once, and no reset."""

import base64
import datetime
import json
import subprocess
import time

from conftest import (HVDRUN, HVDRUN_TIME, Child, etcdctl, rank_lines,
                      untimed, wait_until)
from test_bed_jobs import hosts_arg
from test_elastic import Scenario, check_consistent_finish
from test_status import get, status_url


def batches(s):
    return [r for r in s.records() if r["event"] == "batch"]


def check_adopted_finish(result, s, killed, took_over):
    """The standby's job ended as a fault-free one: the exact model, no
    reset, training while no hvdrun led, and every rank's output."""
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
    records = s.records()
    assert not [r for r in records if r["event"] == "reset"], records
    assert [r for r in records if r["event"] == "batch" and
            killed < r["time"] < took_over], (killed, took_over)
    for rank in range(4):
        assert "done" in rank_lines(result.stdout, rank), result.stdout
    assert ("hvdrun: every rank of the last generation finished; job "
            "succeeded after 0 resets") in untimed(result.stderr), \
        result.stderr


def leader_on(host, args, s, slots, hvdrun, tmp_path, job, extra=()):
    """(leader, standby): hvdrun started over ssh on bed host `host` with
    `args`, once its `slots` workers train, and a standby beside the
    test. The leader's output comes over ssh, which outlives a cut (no
    keepalive here): what it writes meanwhile arrives once the link is
    back."""
    leader = Child(subprocess.Popen(
        ["ssh", host, str(HVDRUN), *extra, *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=tmp_path), "the leader")
    try:
        wait_until(lambda: leader.proc.poll() is not None or
                   len({r["slot"] for r in batches(s)}) == slots,
                   "every worker training", timeout=90)
        assert leader.proc.poll() is None, leader.text("stderr")
        standby = hvdrun.start(["--standby", *args], cwd=tmp_path)
        standby.wait_for_line(
            lambda l: f"hvdrun: standby for job '{job}'" in l,
            "the standby waiting", stream="stderr", timeout=30)
    except BaseException:
        leader.proc.kill()
        raise
    return leader, standby


def show_leader(leader):
    """What the leader (over ssh) said so far, for a failed test's report
    (pytest shows what a failed test printed)."""
    print("--- the leader's stderr so far\n" + leader.text("stderr"))


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
    check_adopted_finish(standby.finish(timeout=180), s, killed, took_over)
    listed = etcdctl(endpoints, "get", "--prefix", "--keys-only",
                     "/hvd/jobs/takeover/")
    assert listed.returncode == 0 and listed.stdout.strip() == "", \
        listed.stdout


def test_a_crash_of_the_leaders_host_that_ran_workers_is_a_failure(
        bed, bed_etcd, hvdrun, tmp_path):
    """The leader runs on a bed host beside two of the six workers, and
    that host crashes (ctl.sh crash: every process killed, its link
    gone). The standby adopts the four workers of the other hosts; the two
    that died with the leader cannot be reached to adopt (their guards
    waited for an adopter like every other, but died with their host):
    they are failed workers, their host is blacklisted and the survivors
    go on from the last commit, with the model exact."""
    _, endpoints = bed_etcd
    leader_host, *workers = [bed.ctl("add")[0] for _ in range(3)]
    s = Scenario(tmp_path, "", epochs=8, batches=20, sleep=0.1)
    args = ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            endpoints, "--job-id", "crash", "--job-secret-file",
            str(tmp_path / "job.secret"), "--adopt-grace-seconds", "60",
            "-np", "6", "--min-np", "2",
            "-H", hosts_arg([leader_host, *workers]), *s.command()]
    leader, standby = leader_on(leader_host, args, s, 6, hvdrun, tmp_path,
                                "crash")
    try:
        bed.ctl("crash", leader_host)
        standby.wait_for_line(
            lambda l: "hvdrun: took job 'crash' over at generation 1: "
            "adopting 6 of 6 workers" in l, "the standby taking over",
            stream="stderr", timeout=40)
        result = standby.finish(timeout=180)
    except BaseException:
        show_leader(leader)
        raise
    finally:
        leader.proc.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
    assert {r["slot"].split(":")[0] for r in s.done()} == set(workers)
    # A link lost (ssh exited 255) and the peers asking for a reset
    # without its worker: a failure at once, not after a reattach window;
    # the host's other worker is stopped with it.
    assert [l for l in result.stderr.splitlines()
            if f"slot {leader_host}:" in l and
            ("lost its link to hvdrun, and its peers asked for a reset "
             "without it" in l or l.endswith("exited with code 255"))], \
        result.stderr
    assert f"host {leader_host} blacklisted" in result.stderr, result.stderr
    assert "job succeeded after 1 reset" in result.stderr, result.stderr


def watched(endpoints, prefix, since, until):
    """Every change under `prefix` from revision `since` through `until`,
    as etcd's own history has them: [(revision, kind, key, value)]."""
    watch = subprocess.Popen(
        ["etcdctl", "--endpoints", endpoints, "watch", "--prefix", prefix,
         "--rev", str(since), "-w", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    changes = []
    try:
        deadline = time.monotonic() + 20
        while not changes or changes[-1][0] < until:
            assert time.monotonic() < deadline, changes
            line = watch.stdout.readline()
            assert line, watch.stderr.read()
            for event in json.loads(line).get("Events") or []:
                kv = event["kv"]
                changes.append((
                    kv["mod_revision"] if "mod_revision" in kv else
                    json.loads(line)["Header"]["revision"],
                    "delete" if event.get("type") == 1 else "put",
                    base64.b64decode(kv["key"]).decode(),
                    base64.b64decode(kv.get("value", "")).decode()))
    finally:
        watch.kill()
        watch.wait()
    return changes


def logged_at(line):
    """The wall-clock time of an hvdrun log line ("[YYYY-mm-dd HH:MM:SS.f]
    ..."), in seconds since the epoch."""
    return datetime.datetime.strptime(
        HVDRUN_TIME.match(line).group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()


def revision(endpoints):
    got = etcdctl(endpoints, "get", "--keys-only", "none", "-w", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)["header"]["revision"]


def test_a_partitioned_leader_changes_nothing_once_its_lease_is_gone(
        bed, bed_etcd, hvdrun, tmp_path):
    """The leader runs on a bed host and that host's link goes down
    (ctl.sh partition): its links to etcd and to the workers are cut, it
    lives on. The standby leads once the lease ends and adopts the four
    workers. The cut-off leader sees its links to the workers fail and
    tries to reattach them only while it is sure it leads, and starts
    nothing after the cut; etcd's history
    shows no write of its from the cut on: the old key's expiry, then
    the standby's writes alone. Healed, the old leader has ended; the job
    ends under the standby with the exact model."""
    _, endpoints = bed_etcd
    leader_host, *workers = [bed.ctl("add")[0] for _ in range(3)]
    s = Scenario(tmp_path, "", epochs=10, batches=20, sleep=0.1)
    args = ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            endpoints, "--job-id", "cut", "--job-secret-file",
            str(tmp_path / "job.secret"), "--adopt-grace-seconds", "60",
            "-np", "4", "--min-np", "2", "-H", hosts_arg(workers),
            *s.command()]
    # At the info level the leader logs each worker it starts.
    leader, standby = leader_on(leader_host, args, s, 4, hvdrun, tmp_path,
                                "cut", extra=("--log-level", "info"))
    try:
        cut_at = revision(endpoints)
        bed.ctl("partition", leader_host)
        cut = time.time()
        standby.wait_for_line(
            lambda l: "hvdrun: took job 'cut' over at generation 1: "
            "adopting 4 of 4 workers" in l, "the standby taking over",
            stream="stderr", timeout=40)
        # Cut off for longer than its links to the workers live (ssh's
        # keepalive), so the old leader has failures to act on.
        trains_until = time.time() + 8
        wait_until(lambda: [r for r in batches(s)
                            if r["time"] > trains_until],
                   "the workers training under the standby")
        bed.ctl("heal", leader_host)
        old = leader.finish(timeout=60)
        result = standby.finish(timeout=180)
    except BaseException:
        show_leader(leader)
        raise
    finally:
        leader.proc.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
    assert not [r for r in s.records() if r["event"] == "reset"]
    assert time.time() - cut > 8

    # Its log: it started nothing after the cut, and tried to reattach
    # the links it lost only while it was sure it led.
    old_lines = old.stderr.splitlines()
    started = [l for l in old_lines if " is pid " in l]
    assert started and all(logged_at(l) < cut for l in started), \
        (cut, old.stderr)
    lost_lead = [logged_at(l) for l in old_lines
                 if "hvdrun: lost the lead of job 'cut'" in l]
    assert lost_lead, old.stderr
    assert all(logged_at(l) < lost_lead[0] for l in old_lines
               if "is reattached through pid" in l), old.stderr
    assert old.returncode != 0, old.stderr

    # etcd's history from the cut on: the old leader's key went with its
    # lease, the standby's key came next, and every later write to the
    # job is fenced by the standby's key; the driver's address is the
    # standby's only.
    changes = watched(endpoints, "/hvd/jobs/cut/", cut_at + 1,
                      revision(endpoints))
    leader_changes = [c for c in changes if c[2] == "/hvd/jobs/cut/leader"]
    assert leader_changes[0][1] == "delete", changes
    taken = leader_changes[1]
    assert taken[1] == "put" and \
        json.loads(taken[3])["pid"] == standby.proc.pid, changes
    assert [c for c in changes if c[0] < taken[0]] == [leader_changes[0]], \
        changes
    drivers = {c[3][64:] for c in changes
               if c[2] == "/hvd/jobs/cut/driver" and c[1] == "put"}
    assert len(drivers) == 1, drivers


def test_a_leader_cut_off_for_less_than_its_lease_reattaches_its_workers(
        bed, bed_etcd, tmp_path):
    """The leader's host is cut off (ctl.sh partition) for 8 s, longer
    than its ssh links to the workers live (ssh's keepalive: about 3 s)
    and shorter than its lease (20 s). Its links are lost, not its
    workers: it reattaches each one (ssh host hvdrun --hvd-internal-adopt,
    a try a second while --adopt-grace-seconds lasts) once the cut heals,
    and the job ends under it with the exact model, no reset, and every
    rank's output relayed through the new links."""
    _, endpoints = bed_etcd
    leader_host, *workers = [bed.ctl("add")[0] for _ in range(3)]
    s = Scenario(tmp_path, "", epochs=10, batches=20, sleep=0.1, print=True)
    args = ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            endpoints, "--job-id", "blink", "--job-secret-file",
            str(tmp_path / "job.secret"), "--adopt-grace-seconds", "60",
            "--leader-lease-seconds", "20", "-np", "4", "--min-np", "2",
            "-H", hosts_arg(workers), *s.command()]
    leader = Child(subprocess.Popen(
        ["ssh", leader_host, str(HVDRUN), "--log-level", "info", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path), "the leader")
    try:
        wait_until(lambda: leader.proc.poll() is not None or
                   len({r["slot"] for r in batches(s)}) == 4,
                   "every worker training", timeout=90)
        assert leader.proc.poll() is None, leader.text("stderr")
        bed.ctl("partition", leader_host)
        healed_at = time.time() + 8
        wait_until(lambda: [r for r in batches(s) if r["time"] > healed_at],
                   "the workers training through the cut")
        bed.ctl("heal", leader_host)
        result = leader.finish(timeout=180)
    finally:
        leader.proc.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
    assert not [r for r in s.records() if r["event"] == "reset"]
    lines = result.stderr.splitlines()
    for slot in [f"{host}:{i}" for host in workers for i in (0, 1)]:
        assert [l for l in lines if f"slot {slot} (rank " in l and
                "lost its link to hvdrun" in l and "reattaching" in l], \
            result.stderr
        assert [l for l in lines if f"slot {slot} (rank " in l and
                "is reattached through pid" in l], result.stderr
    assert "blacklisted" not in result.stderr, result.stderr
    for rank in range(4):
        assert "done" in rank_lines(result.stdout, rank), result.stdout
    assert "job succeeded after 0 resets" in result.stderr, result.stderr
