"""What the leading hvdrun keeps of its driver in etcd (--rendezvous-backend
etcd), so that another hvdrun could take the job over: the state under
<prefix>state, signed with the job's signing key, which the hvdruns of a
job derive from the secret they share through --job-secret-file."""

import json
import os
import subprocess
import time

from conftest import HVDRUN, wait_until
from signing import open_signed_etcd_value
from test_elastic import Scenario, check_consistent_finish

PREFIX = "/hvd/jobs/state/"


def opened(etcd, secret, key):
    """The value of `key`, its signature checked as hvd signs it
    (rendezvous/etcd_seal.h); None while there is no such key."""
    got = etcd.ctl("get", "--print-value-only", key)
    assert got.returncode == 0, got.stderr
    signed = got.stdout.rstrip("\n")
    if not signed:
        return None
    return open_signed_etcd_value(secret, key, signed)


def worker_id_of(pid):
    environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    for entry in environ:
        if entry.startswith(b"HVD_WORKER_ID="):
            return int(entry.split(b"=", 1)[1])
    return None


def test_the_driver_state_in_etcd_follows_a_kill_and_is_sealed(
        hvdrun, etcd, tmp_path):
    secret_file = tmp_path / "job.secret"
    s = Scenario(tmp_path, "", epochs=3, batches=40, sleep=0.1,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "kill"}])
    child = hvdrun.start(["--rendezvous-backend", "etcd",
                          "--rendezvous-endpoint", etcd.endpoint,
                          "--job-id", "state", "--job-secret-file",
                          str(secret_file), "-np", "4", "--min-np", "2",
                          "-H", "localhost:2,127.0.0.1:2",
                          "--blacklist-cooldown-range", "100", "200",
                          *s.command()])
    # A missing secret file is made, private to its user.
    wait_until(lambda: secret_file.exists(), "hvdrun making the secret file")
    assert secret_file.stat().st_mode & 0o777 == 0o600
    secret = secret_file.read_text().strip()

    def state():
        value = opened(etcd, secret, PREFIX + "state")
        return json.loads(value) if value is not None else None

    # The second generation, after the kill, joined by every slot.
    after = wait_until(
        lambda: (lambda st: st and st["plan"]["generation"] >= 2 and
                 st["complete_generation"] == st["plan"]["generation"] and
                 st)(state()),
        "the state of a generation after the kill, complete")
    kills = [r["time"] for r in s.records() if r["event"] == "exit"]
    assert len(kills) == 1, s.records()
    plan = after["plan"]
    assert sorted(plan["slots"]) == ["localhost:0", "localhost:1"], plan
    assert "127.0.0.1 blacklisted" in plan["reason"], plan
    # The blacklist's end is wall-clock time: the first cooldown (100 s)
    # after the kill, as another machine would read it.
    hosts = {h["host"]: h for h in after["hosts"]}
    assert set(hosts) == {"localhost", "127.0.0.1"}, hosts
    assert hosts["localhost"]["blacklisting"] == {"times": 0}, hosts
    out = hosts["127.0.0.1"]["blacklisting"]
    assert out["times"] == 1, hosts
    until = out["until_ms"] / 1000
    assert kills[0] + 99 < until < time.time() + 101, (kills, out)
    # The registry: the running workers, each with its pid and the
    # address of its notification server; each pid is that worker's.
    workers = {w["slot"]: w for w in after["workers"]}
    assert sorted(workers) == ["localhost:0", "localhost:1"], workers
    for slot, worker in workers.items():
        assert plan["workers"][slot] == worker["id"], (plan, worker)
        assert worker["joined"] == plan["generation"], worker
        assert worker["joined_rank"] == plan["slots"][slot]["rank"], worker
        assert not worker["stopping"], worker
        assert worker_id_of(worker["pid"]) == worker["id"], worker
        host, port = worker["notify"].rsplit(":", 1)
        assert host and int(port) > 0, worker
    # Rank 0 held the committed state before the kill, and still does.
    assert workers["localhost:0"]["id"] in after["holders"], after
    # The job's settings are sealed too.
    settings = json.loads(opened(etcd, secret, PREFIX + "settings"))
    assert settings["min_np"] == 2 and settings["elastic"], settings

    result = child.finish(120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert etcd.keys(PREFIX) == []


def test_a_job_secret_file_open_to_others_is_refused(etcd, tmp_path):
    secret_file = tmp_path / "job.secret"
    secret_file.write_text("a" * 64 + "\n")
    secret_file.chmod(0o644)
    result = subprocess.run(
        [str(HVDRUN), "--rendezvous-backend", "etcd", "--rendezvous-endpoint",
         etcd.endpoint, "--job-secret-file", str(secret_file), "-np", "1",
         "true"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert (f"--job-secret-file {secret_file}: the file is open to others "
            f"(owner uid {os.geteuid()}, mode 0644): it must belong to uid "
            f"{os.geteuid()} with mode 0600 or 0400 (chmod 600 "
            f"{secret_file})") in result.stderr, result.stderr
    assert etcd.keys("/hvd/jobs/") == []
    # A secret too short to be a key is refused too.
    secret_file.chmod(0o600)
    secret_file.write_text("short\n")
    result = subprocess.run(
        [str(HVDRUN), "--rendezvous-backend", "etcd", "--rendezvous-endpoint",
         etcd.endpoint, "--job-secret-file", str(secret_file), "-np", "1",
         "true"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "the secret must be 32 to 256 letters" in result.stderr, \
        result.stderr
