"""Remote workers that outlive their hvdrun (--adopt-grace-seconds, with
the etcd backend, workers over real ssh on the test bed): when hvdrun dies,
each remote guard keeps its worker and waits on its socket for the hvdrun
that leads the job next, which reaches it with `ssh host hvdrun
--hvd-internal-adopt NAME`; a guard nobody adopts within the grace stops
its worker. The workers and their socket names are read from the driver's
state in etcd, signed with the job's key (from --job-secret-file)."""

import hashlib
import json
import os
import signal
import subprocess
import threading
import time

from conftest import HVDRUN, ROOT, etcdctl, wait_until
from signing import open_signed_etcd_value
from test_bed_jobs import hosts_arg

WORKER = ROOT / "tests" / "integration" / "workers" / "until_told_worker.py"
PYTHON = "/usr/bin/python3"


def steps(folder, rank):
    path = folder / f"steps.{rank}"
    return int(path.read_text()) if path.exists() else 0


def driver_state(endpoints, secret, job):
    """The driver's state the leader keeps in etcd, its signature
    checked."""
    key = f"/hvd/jobs/{job}/state"
    got = etcdctl(endpoints, "get", "--print-value-only", key)
    assert got.returncode == 0, got.stderr
    signed = got.stdout.rstrip("\n")
    if not signed:
        return None
    return json.loads(open_signed_etcd_value(secret, key, signed))


def socket_name(job, worker_id):
    """remote/adopt_socket.h's AdoptSocketName."""
    return hashlib.sha256(job.encode()).hexdigest()[:16] + \
        f"-w{worker_id}.sock"


def start_job(bed, bed_etcd, hvdrun, tmp_path, job, grace):
    """A job of two workers, one on each of two new hosts, training until
    told; returns (hvdrun's Child, the steps folder, {rank: worker}) with
    each worker as the driver's state in etcd has it."""
    _, endpoints = bed_etcd
    hosts = [bed.ctl("add")[0] for _ in range(2)]
    folder = tmp_path / job
    folder.mkdir()
    secret_file = tmp_path / f"{job}.secret"
    child = hvdrun.start(["--rendezvous-backend", "etcd",
                          "--rendezvous-endpoint", endpoints,
                          "--job-id", job, "--job-secret-file",
                          str(secret_file), "--adopt-grace-seconds",
                          str(grace), "-np", "2", "-H", hosts_arg(hosts, 1),
                          PYTHON, str(WORKER), str(folder)], cwd=tmp_path)
    wait_until(lambda: child.poll() is not None or
               all(steps(folder, r) > 0 for r in range(2)),
               "both workers training", timeout=90)
    assert child.poll() is None, child.finish().stderr
    secret = secret_file.read_text().strip()
    state = wait_until(
        lambda: (lambda st: st and all(w["pid"] for w in st["workers"]) and
                 st)(driver_state(endpoints, secret, job)),
        "the driver's state with both workers' pids")
    by_rank = {w["start_rank"]: w for w in state["workers"]}
    assert sorted(by_rank) == [0, 1], state
    return child, folder, by_rank


def adopted(worker):
    """Whether the worker's guard holds an adopter's connection: it then
    has two sockets, its listener and that connection (its ssh link's
    descriptors are /dev/null by then)."""
    stat = open(f"/proc/{worker['pid']}/stat").read()
    guard = int(stat.rsplit(")", 1)[1].split()[1])
    sockets = [fd for fd in os.listdir(f"/proc/{guard}/fd")
               if os.readlink(f"/proc/{guard}/fd/{fd}").startswith("socket:")]
    return len(sockets) == 2


def kill_hvdrun(child):
    child.proc.kill()
    child.proc.wait(timeout=10)


def trains_on(folder, what):
    before = [steps(folder, r) for r in range(2)]
    wait_until(lambda: all(steps(folder, r) > before[r] + 20
                           for r in range(2)), what, timeout=30)


class Adopter:
    """`ssh host hvdrun --hvd-internal-adopt NAME`, as the hvdrun that leads
    next runs it, with a heartbeat on its input every half second."""

    def __init__(self, host, name):
        self.proc = subprocess.Popen(
            ["ssh", host, str(HVDRUN), "--hvd-internal-adopt", name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.beating = threading.Thread(target=self._beat, daemon=True)
        self.beating.start()

    def _beat(self):
        try:
            while self.proc.poll() is None:
                self.proc.stdin.write(b"\0")
                self.proc.stdin.flush()
                time.sleep(0.5)
        except (BrokenPipeError, ValueError):
            pass

    def send(self, sig):
        self.proc.stdin.write(bytes([sig]))
        self.proc.stdin.flush()

    def finish(self, timeout=60):
        """(exit code, stdout, stderr) once it ended by itself: its input
        stays open, as the new leader's guard keeps it."""
        self.proc.wait(timeout=timeout)
        out, err = self.proc.stdout.read(), self.proc.stderr.read()
        self.proc.stdin.close()
        return self.proc.returncode, out.decode(), err.decode()


def test_workers_train_on_without_hvdrun_and_an_adopter_gets_their_end(
        bed, bed_etcd, hvdrun, tmp_path):
    child, folder, workers = start_job(bed, bed_etcd, hvdrun, tmp_path,
                                       "adopted", grace=60)
    kill_hvdrun(child)
    # No reset, no driver: the two workers go on training together.
    trains_on(folder, "the workers training after hvdrun was killed")
    adopters = {rank: Adopter(w["host"], socket_name("adopted", w["id"]))
                for rank, w in workers.items()}
    for worker in workers.values():
        wait_until(lambda: adopted(worker), "the adopter attached")
    trains_on(folder, "the workers training once adopted")
    # Told to stop, both end after the same step; each adopter relays its
    # worker's last line and exits with its code.
    (folder / "stop").touch()
    for rank, adopter in adopters.items():
        code, out, err = adopter.finish()
        assert code == 0, (rank, out, err)
        assert f"rank {rank}: {steps(folder, rank)} steps" in out, (out, err)


def test_a_signal_through_the_adopter_reaches_the_worker(
        bed, bed_etcd, hvdrun, tmp_path):
    child, folder, workers = start_job(bed, bed_etcd, hvdrun, tmp_path,
                                       "signalled", grace=60)
    kill_hvdrun(child)
    adopters = {rank: Adopter(w["host"], socket_name("signalled", w["id"]))
                for rank, w in workers.items()}
    for worker in workers.values():
        wait_until(lambda: adopted(worker), "the adopter attached")
    trains_on(folder, "the workers training once adopted")
    adopters[1].send(signal.SIGKILL)
    code, _, err = adopters[1].finish()
    assert code == 128 + signal.SIGKILL, err
    # Its peer's next allreduce fails: it exits with an error, which its
    # adopter hands on too.
    code, out, err = adopters[0].finish()
    assert code not in (0, 255), (code, out, err)


def test_a_worker_nobody_adopts_is_stopped_after_the_grace(
        bed, bed_etcd, hvdrun, tmp_path):
    child, folder, workers = start_job(bed, bed_etcd, hvdrun, tmp_path,
                                       "orphaned", grace=4)
    hosts = [w["host"] for w in workers.values()]
    kill_hvdrun(child)
    killed = time.time()
    trains_on(folder, "the workers training within the grace")
    for host in hosts:
        wait_until(lambda: not bed.job_pids(host),
                   f"the workers on {host} stopped after the grace",
                   timeout=40)
    assert time.time() - killed >= 4
    # Too late: there is nothing to adopt, and the adopter says so.
    late = Adopter(hosts[0], socket_name("orphaned", workers[0]["id"]))
    code, _, err = late.finish()
    assert code == 255, err
    assert "no worker to adopt at /tmp/hvd-adopt-0/" in err, err
    assert "it ended, or its guard's grace ran out" in err, err
