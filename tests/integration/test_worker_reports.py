"""Workers report their progress to the driver's rendezvous server (issue
14): real Python workers through hvd's binding and its reporter thread,
against a real RendezvousServer whose ReportBoard the test drives
(build/tests/rendezvous/report_board_server, standing in for hvdrun's
driver until that admits slots itself). The test sets each worker's
environment as hvdrun's worker_env.cc and worker_launch.cc do.
"""

import json
import os
import pathlib
import secrets
import subprocess
import sys

import pytest

from conftest import ROOT, Child, kill_session, wait_until
from signing import worker_key

SERVER = ROOT / "build" / "tests" / "rendezvous" / "report_board_server"
WORKER = pathlib.Path(__file__).parent / "workers" / "report_worker.py"
HOST = "127.0.0.1"


class Board:
    """The report_board_server child: one command, one answer line."""

    def __init__(self, secret):
        if not SERVER.exists():
            pytest.fail(f"{SERVER} is missing: build the tree first")
        env = dict(os.environ, HVD_SECRET_KEY=secret)
        proc = subprocess.Popen([str(SERVER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, start_new_session=True)
        self.child = Child(proc, "report_board_server")
        line = self.child.wait_for_line(lambda l: l.startswith("PORT "),
                                        "the server's port", timeout=30)
        self.port = int(line.split()[1])
        self._answers = 0

    def ask(self, command, timeout=30):
        self.child.proc.stdin.write(command + "\n")
        self.child.proc.stdin.flush()
        self._answers += 1
        answer = self.child.wait_for_lines(
            lambda l: l == "OK" or l.startswith(("ERROR", "REPORTS ")),
            f"the answer to {command!r}", count=self._answers,
            timeout=timeout)[-1]
        assert not answer.startswith("ERROR"), f"{command}: {answer}"
        return answer

    def reports(self):
        return json.loads(self.ask("reports")[len("REPORTS "):])

    def close(self):
        self.child.proc.stdin.close()
        self.child.finish(timeout=30)


class Worker:
    """One worker process with hvdrun's environment for its slot."""

    def __init__(self, board, secret, rank, size, worker_id, args,
                 elastic=False, interval="0.2"):
        self.slot = f"{HOST}:{rank}"
        self.worker_id = worker_id
        env = dict(os.environ)
        env.update({
            "HOROVOD_RANK": str(rank), "HOROVOD_SIZE": str(size),
            "HOROVOD_LOCAL_RANK": str(rank), "HOROVOD_LOCAL_SIZE": str(size),
            "HOROVOD_CROSS_RANK": "0", "HOROVOD_CROSS_SIZE": "1",
            "HOROVOD_HOSTNAME": HOST,
            "HOROVOD_GLOO_RENDEZVOUS_ADDR": HOST,
            "HOROVOD_GLOO_RENDEZVOUS_PORT": str(board.port),
            "HVD_WORKER_KEY": worker_key(secret, worker_id, self.slot),
            "HOROVOD_CONTROLLER": "gloo", "HOROVOD_CPU_OPERATIONS": "gloo",
            "HOROVOD_ELASTIC": "1" if elastic else "0",
            "HOROVOD_START_TIMEOUT": "30",
            "HVD_WORKER_ID": str(worker_id),
            "HVD_REPORT_INTERVAL_SECONDS": interval,
        })
        proc = subprocess.Popen([sys.executable, str(WORKER), *map(str, args)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True)
        self.child = Child(proc, f"worker {self.slot}")
        self.pid = proc.pid
        self._said = 0

    def wait_for(self, word, timeout=60):
        self.child.wait_for_line(lambda l: l == word, f"{self.slot}: {word}",
                                 timeout=timeout)

    def go_on(self):
        self.child.proc.stdin.write("go\n")
        self.child.proc.stdin.flush()

    def finish(self):
        self.go_on()
        result = self.child.finish(timeout=60)
        assert result.returncode == 0, (
            f"{self.slot} exited {result.returncode}\n{result.stderr}")


@pytest.fixture
def job():
    """(secret, board, start_worker): the server and the workers are killed
    if the test ends before they do."""
    secret = secrets.token_hex(32)
    board = Board(secret)
    workers = []

    def start(*args, **kwargs):
        worker = Worker(board, secret, *args, **kwargs)
        workers.append(worker)
        return worker

    yield secret, board, start
    for child in [w.child for w in workers] + [board.child]:
        if child.proc.poll() is None:
            kill_session(child.proc)


def wait_for_reports(board, done, what, timeout=30):
    """Board.reports() once `done(reports)` holds (asked every 50 ms)."""
    found = []

    def check():
        reports = board.reports()
        found[:] = [reports]
        return done(reports)

    wait_until(check, what, timeout=timeout)
    return found[0]


def test_static_workers_report_their_collectives(job):
    secret, board, start = job
    workers = [start(rank, 2, 11 + rank, ["static", 5]) for rank in range(2)]
    board.ask("admit " + " ".join(f"{w.slot}={w.worker_id}"
                                  for w in workers))
    for w in workers:
        w.wait_for("DONE")

    def complete(reports):
        return all(w.slot in reports and
                   reports[w.slot]["ops"]["allreduce"]["count"] >= 5 and
                   "recovery" in reports[w.slot] for w in workers)

    # While the workers are alive (they wait for the test): the periodic
    # reports, not only the last one at exit.
    reports = wait_for_reports(board, complete, "both workers' reports")
    for rank, w in enumerate(workers):
        r = reports[w.slot]
        assert r["worker"] == w.worker_id and r["pid"] == w.pid, r
        assert (r["generation"], r["rank"], r["size"]) == (0, rank, 2), r
        assert r["ops"]["allreduce"] == {"count": 5, "bytes": 5 * 1024}, r
        assert r["ops"]["broadcast"] == {"count": 1, "bytes": 80}, r
        assert set(r["ops"]) == {
            "allreduce", "allgather", "broadcast", "alltoall",
            "reducescatter", "barrier", "join", "add_process_set",
            "remove_process_set"}, r
        assert r["ops"]["allgather"] == {"count": 0, "bytes": 0}, r
        assert (r["steps"], r["commits"], r["stalls"]) == (0, 0, 0), r
        recovery = r["recovery"]
        assert recovery["generation"] == 0, r
        assert recovery["connect_ms"] > 0 and recovery["sync_ms"] == 0, r
        assert recovery["first_step_ms"] >= 0, r
    counts = {w.slot: reports[w.slot]["received_count"] for w in workers}
    for w in workers:
        w.finish()
    # Each sent its last report before it exited.
    final = board.reports()
    for w in workers:
        assert final[w.slot]["received_count"] > counts[w.slot], final
    board.close()


def test_a_worker_with_reports_off_or_of_another_process_stores_nothing(job):
    secret, board, start = job
    board.ask(f"admit {HOST}:0=21")
    # Reports off: no report at all, not even at exit.
    quiet = start(0, 1, 21, ["static", 2], interval="0")
    quiet.wait_for("DONE")
    quiet.finish()
    assert board.reports() == {}
    # Reports on, but this process is not the one admitted for the slot
    # (hvdrun replaced it): every report is refused.
    stranger = start(0, 1, 22, ["static", 2])
    stranger.wait_for("DONE")
    stranger.finish()
    assert board.reports() == {}
    # The admitted process's reports are stored (so the two above could
    # have been).
    admitted = start(0, 1, 21, ["static", 2])
    admitted.wait_for("DONE")
    admitted.finish()
    assert board.reports()[f"{HOST}:0"]["ops"]["allreduce"]["count"] == 2
    board.close()


def test_elastic_workers_report_steps_commits_and_each_recovery(job):
    secret, board, start = job
    workers = [start(rank, 2, 31 + rank, ["elastic", 6, 3], elastic=True)
               for rank in range(2)]
    slots = " ".join(f"{w.slot}={w.worker_id}" for w in workers)
    board.ask("admit " + slots)
    board.ask("publish 1 1 " + slots)
    for w in workers:
        w.wait_for("PAUSED")

    def recovered(generation, steps, commits):
        def done(reports):
            return all(
                w.slot in reports and
                reports[w.slot].get("recovery", {}).get("generation") ==
                generation and
                (reports[w.slot]["steps"], reports[w.slot]["commits"]) ==
                (steps, commits) for w in workers)
        return done

    reports = wait_for_reports(board, recovered(1, 3, 3),
                               "generation 1's recovery marks and 3 steps")
    for rank, w in enumerate(workers):
        r = reports[w.slot]
        assert (r["generation"], r["rank"], r["size"]) == (1, rank, 2), r
        # The first generation syncs (every slot is new).
        recovery = r["recovery"]
        assert recovery["connect_ms"] > 0 and recovery["sync_ms"] > 0, r
        assert recovery["first_step_ms"] >= 0, r
        assert r["ops"]["allreduce"]["count"] >= 3, r
        assert r["ops"]["broadcast"]["count"] >= 1, r  # the sync
    # Hosts "changed": generation 2 (a sync again), announced to the
    # workers, who reset into it at their next commit.
    board.ask("publish 2 1 " + slots)
    board.ask("notify 2")
    for w in workers:
        w.go_on()
    for w in workers:
        w.wait_for("DONE")
    # 6 steps in all; commits: 3, the one that raised HostsUpdatedInterrupt,
    # and 3 in generation 2.
    reports = wait_for_reports(board, recovered(2, 6, 7),
                               "generation 2's recovery marks and 6 steps")
    for rank, w in enumerate(workers):
        r = reports[w.slot]
        assert (r["generation"], r["rank"], r["size"]) == (2, rank, 2), r
        assert r["recovery"]["sync_ms"] > 0, r
        assert r["pid"] == w.pid, r
    for w in workers:
        w.finish()
    board.close()
