"""Jobs whose rendezvous lives in etcd (--rendezvous-backend etcd), on one
real etcd member on this machine: the workers meet under the job's
prefix, one hvdrun leads a job id, the job outlives a pause of etcd
longer than the lease, and leaves no key behind."""

import hashlib
import hmac
import json
import signal
import time

from conftest import ROOT, free_port, rank_lines, untimed, wait_until
from test_control_plane_attack import environ_of
from test_elastic import Scenario, check_consistent_finish
from test_status import get, status_url

WORKER = ROOT / "tests" / "integration" / "workers" / "until_told_worker.py"
PYTHON = "/usr/bin/python3"


def etcd_args(etcd, job):
    return ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            etcd.endpoint, "--job-id", job]


def steps(folder, rank):
    path = folder / f"steps.{rank}"
    return int(path.read_text()) if path.exists() else 0


def start_steady_job(hvdrun, etcd, tmp_path, job, np_=2):
    folder = tmp_path / job
    folder.mkdir()
    child = hvdrun.start([*etcd_args(etcd, job), "-np", str(np_), PYTHON,
                          str(WORKER), str(folder)])
    wait_until(lambda: all(steps(folder, r) > 0 for r in range(np_)),
               f"every rank of job {job} training")
    return child, folder


def leader_of(url):
    """status.json's account of the lead."""
    code, body = get(url, "/status.json")
    assert code == 200, body
    return json.loads(body)["leader"]


def test_workers_meet_under_the_job_prefix_and_the_job_leaves_no_key(
        hvdrun, etcd, tmp_path):
    child, folder = start_steady_job(hvdrun, etcd, tmp_path, "meet", np_=3)
    leader = leader_of(status_url(child))
    assert leader["leading"] and leader["job_id"] == "meet", leader
    assert leader["etcd"] == etcd.endpoint, leader
    assert leader["this_hvdrun"].startswith(
        f"hvdrun pid {child.proc.pid} on "), leader
    prefix = "/hvd/jobs/meet/"
    keys = etcd.keys(prefix)
    for rank in range(3):
        assert f"{prefix}gloo/g0/global/{rank}" in keys, keys
    assert f"{prefix}leader" in keys and f"{prefix}settings" in keys, keys
    # Values are sealed: a hex HMAC in front of what Gloo wrote.
    value = etcd.ctl("get", "--print-value-only", f"{prefix}gloo/g0/global/0")
    seal = value.stdout[:64]
    assert len(seal) == 64 and all(c in "0123456789abcdef" for c in seal), \
        value.stdout[:100]
    (folder / "stop").touch()
    result = child.finish(60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(rank_lines(result.stdout, 2)) == 1, result.stdout
    assert (f"hvdrun: leads job 'meet' in etcd at {etcd.endpoint} (keys "
            f"under {prefix})") in untimed(result.stderr), result.stderr
    assert etcd.keys(prefix) == []


def test_a_second_hvdrun_for_a_led_job_is_refused_naming_the_leader(
        hvdrun, etcd, tmp_path):
    child, folder = start_steady_job(hvdrun, etcd, tmp_path, "twice")
    second = hvdrun([*etcd_args(etcd, "twice"), "-np", "1", "true"],
                    timeout=30)
    assert second.returncode == 1, second.stderr
    assert (f"job 'twice' already has a leader in etcd at {etcd.endpoint}: "
            f"hvdrun pid {child.proc.pid} on ") in second.stderr, \
        second.stderr
    assert "Give this job another --job-id" in second.stderr
    # The first job lost nothing.
    before = steps(folder, 0)
    wait_until(lambda: steps(folder, 0) > before, "the first job training on")
    (folder / "stop").touch()
    assert child.finish(60).returncode == 0


def test_an_unreachable_etcd_fails_at_once_naming_it(hvdrun, tmp_path):
    endpoint = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = hvdrun(["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
                     endpoint, "-np", "1", "true"], timeout=30)
    assert result.returncode == 1
    assert f"cannot reach etcd at {endpoint} for job 'hvd-" in \
        result.stderr, result.stderr
    assert "does it have a quorum?" in result.stderr
    assert time.monotonic() - started < 10


def test_etcd_paused_past_the_lease_the_job_trains_on_and_leads_again(
        hvdrun, etcd, tmp_path):
    child, folder = start_steady_job(hvdrun, etcd, tmp_path, "pause")
    url = status_url(child)
    etcd.proc.send_signal(signal.SIGSTOP)
    try:
        child.wait_for_line(lambda l: "hvdrun: lost the lead of job 'pause'"
                            in l, "hvdrun losing the lead", stream="stderr",
                            timeout=20)
        # The page follows within its snapshot's age (about a second).
        lost = wait_until(lambda: (lambda l: not l["leading"] and l)(
            leader_of(url)), "the status page showing the lost lead")
        assert "could not renew its lease" in \
            lost["changes"][-1]["reason"], lost
        # Training needs no etcd between resets.
        before = steps(folder, 1)
        wait_until(lambda: steps(folder, 1) > before + 10,
                   "the workers training while etcd is paused")
    finally:
        etcd.proc.send_signal(signal.SIGCONT)
    child.wait_for_line(lambda l: "hvdrun: leads job 'pause' in etcd again"
                        in l, "hvdrun leading again", stream="stderr",
                        timeout=30)
    again = wait_until(lambda: (lambda l: l["leading"] and l)(
        leader_of(url)), "the status page showing the lead again")
    assert again["changes"][-1]["leading"], again
    (folder / "stop").touch()
    result = child.finish(60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert etcd.keys("/hvd/jobs/pause/") == []


def test_an_elastic_job_recovers_from_a_kill_through_etcd(
        hvdrun, etcd, tmp_path):
    s = Scenario(tmp_path, "", epochs=3, batches=4,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "kill"}])
    result = hvdrun([*etcd_args(etcd, "kill"), "-np", "4", "--min-np", "2",
                     "-H", "localhost:2,127.0.0.1:2", *s.command()],
                    timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert "host 127.0.0.1 blacklisted" in result.stderr
    assert etcd.keys("/hvd/jobs/kill/") == []


def test_a_workers_keys_cannot_move_the_address_its_peers_follow(
        hvdrun, etcd, tmp_path):
    """Issue 33: an etcd job's worker holds no job secret, so whatever it
    seals with what it holds, the workers refuse it as the leading
    hvdrun's address and recover from a kill through the real one."""
    s = Scenario(tmp_path, "", epochs=3, batches=40, sleep=0.1,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "kill"}])
    child = hvdrun.start([*etcd_args(etcd, "forge"), "-np", "4", "--min-np",
                          "2", "-H", "localhost:2,127.0.0.1:2",
                          *s.command()])
    wait_until(lambda: len({r["slot"] for r in s.records()
                            if r["event"] == "batch"}) == 4,
               "every worker training")
    log = next(s.log.glob("localhost:0.*.jsonl"))
    env = environ_of(int(log.name.split(".")[-2]))
    assert "HVD_SECRET_KEY" not in env and "HVD_GENERATIONS_KEY" not in env
    assert len(env["HVD_JOB_PUBLIC_KEY"]) == 64, env
    # The strongest forgery its environment allows (before issue 33 the
    # job secret was there, and this redirected every worker).
    key = "/hvd/jobs/forge/driver"
    fake = "127.0.0.1:1"
    sealing = env.get("HVD_SECRET_KEY", env["HVD_WORKER_KEY"])
    forged = hmac.new(sealing.encode(),
                      f"hvd etcd store\n{key}\n{fake}".encode(),
                      hashlib.sha256).hexdigest() + fake
    assert etcd.ctl("put", key, forged).returncode == 0
    result = child.finish(120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert len([r for r in s.records() if r["event"] == "exit"]) == 1


def kill_while_etcd_is_stopped(hvdrun, etcd, tmp_path, job,
                               elastic_timeout):
    """An elastic job of four whose rank on 127.0.0.1:0 kills itself a few
    seconds in; etcd is stopped (SIGSTOP) once every worker trains, before
    the kill. Returns (hvdrun's Child, the Scenario, when etcd stopped)."""
    s = Scenario(tmp_path, "", epochs=3, batches=40, sleep=0.1,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "kill"}])
    child = hvdrun.start([*etcd_args(etcd, job), "-np", "4", "--min-np",
                          "2", "-H", "localhost:2,127.0.0.1:2",
                          "--elastic-timeout", str(elastic_timeout),
                          *s.command()])
    wait_until(lambda: len({r["slot"] for r in s.records()
                            if r["event"] == "batch"}) == 4,
               "every worker training")
    etcd.proc.send_signal(signal.SIGSTOP)
    return child, s, time.time()


def test_a_reset_that_etcd_cannot_serve_fails_after_the_elastic_timeout(
        hvdrun, etcd, tmp_path):
    """A worker dies while etcd is out of reach: the survivors cannot meet
    for the next generation. They try until the elastic timeout, then the
    job fails, naming etcd, instead of waiting for it for ever."""
    child, s, stopped = kill_while_etcd_is_stopped(hvdrun, etcd, tmp_path,
                                                   "gone", 6)
    try:
        result = child.finish(120)
    finally:
        etcd.proc.send_signal(signal.SIGCONT)
    kills = [r["time"] for r in s.records() if r["event"] == "exit"]
    assert kills and kills[0] > stopped, "the kill came before etcd stopped"
    assert result.returncode != 0, result.stdout + result.stderr
    assert "could not rejoin the job within the elastic timeout (6 s); " \
        "the last attempt: " in result.stdout + result.stderr, \
        result.stdout + result.stderr
    lines = untimed(result.stderr)
    assert any(l.startswith(f"hvdrun: etcd at {etcd.endpoint} stopped "
                            "answering this hvdrun (its lead lapsed ")
               for l in lines[-4:]), result.stderr
    assert lines[-1].endswith("job failed (exit code 1)"), result.stderr


def test_a_reset_waits_for_etcd_and_goes_on_once_it_is_back(
        hvdrun, etcd, tmp_path):
    """The same kill while etcd is out of reach, but etcd comes back
    within the elastic timeout: the survivors meet then, and the model
    ends exact."""
    child, s, stopped = kill_while_etcd_is_stopped(hvdrun, etcd, tmp_path,
                                                   "back", 60)
    try:
        # The kill, the next generation published, and hvdrun's lead
        # lapsed: the survivors are trying to meet without etcd.
        child.wait_for_line(lambda l: "hvdrun: generation 2" in l,
                            "the generation after the kill",
                            stream="stderr")
        child.wait_for_line(lambda l: "hvdrun: lost the lead" in l,
                            "hvdrun's lead lapsing", stream="stderr")
    finally:
        etcd.proc.send_signal(signal.SIGCONT)
        resumed = time.time()
    result = child.finish(120)
    kills = [r["time"] for r in s.records() if r["event"] == "exit"]
    assert kills and kills[0] > stopped, "the kill came before etcd stopped"
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    # The survivors trained in the new world only once etcd was back.
    after = [r["time"] for r in s.records()
             if r["event"] == "batch" and r["size"] == 2]
    assert after and min(after) > resumed, (min(after), resumed)
    assert "hvdrun: leads job 'back' in etcd again" in result.stderr


def test_no_worker_starts_while_hvdrun_is_not_sure_it_leads(
        hvdrun, etcd, tmp_path):
    """A host joins while etcd is paused past the lease: another hvdrun may
    lead the job by then, so this one holds the new workers' start back,
    and starts them once it leads again."""
    s = Scenario(tmp_path, "localhost:2\n", epochs=40, batches=10,
                 sleep=0.05)
    child = hvdrun.start([*etcd_args(etcd, "unsure"), "-np", "2",
                          "--min-np", "2", "--max-np", "4",
                          "--host-discovery-script", str(s.discover),
                          "--discovery-interval", "0.3", *s.command()])
    wait_until(lambda: len({r["slot"] for r in s.records()
                            if r["event"] == "batch"}) == 2,
               "both workers training")
    etcd.proc.send_signal(signal.SIGSTOP)
    try:
        child.wait_for_line(lambda l: "hvdrun: lost the lead of job "
                            "'unsure'" in l, "hvdrun losing the lead",
                            stream="stderr", timeout=20)
        s.hosts_file.write_text("localhost:2\n127.0.0.1:2\n")
        child.wait_for_line(
            lambda l: "hvdrun: holds back the start of slot 127.0.0.1:0 "
            "while it is not sure it leads job 'unsure' (etcd out of "
            "reach)" in l, "hvdrun holding the start back", stream="stderr",
            timeout=20)
        assert not [r for r in s.records()
                    if r["slot"].startswith("127.0.0.1")], s.records()
    finally:
        etcd.proc.send_signal(signal.SIGCONT)
    child.wait_for_line(lambda l: "hvdrun: leads job 'unsure' in etcd "
                        "again" in l, "hvdrun leading again",
                        stream="stderr", timeout=30)
    wait_until(lambda: [r for r in s.records() if r["event"] == "batch" and
                        r["slot"].startswith("127.0.0.1")],
               "the held-back workers training", timeout=60)
    result = child.finish(120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
