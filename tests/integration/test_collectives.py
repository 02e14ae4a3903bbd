"""hvd's collectives through hvdrun: every op and dtype against numpy,
mismatches, and a peer that dies."""

import re
import time

import pytest

from conftest import ROOT, rank_lines

WORKERS = ROOT / "tests" / "integration" / "workers"
PYTHON = "/usr/bin/python3"


def stdout_of(result, rank):
    return rank_lines(result.stdout, rank)


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_every_op_and_dtype_matches_numpy(hvdrun, np_):
    result = hvdrun(["-np", str(np_), PYTHON,
                     str(WORKERS / "collectives_worker.py")], timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(np_):
        lines = stdout_of(result, rank)
        assert len(lines) == 1 and re.fullmatch(
            rf"rank {rank}/{np_}: \d+ checks passed", lines[0]), result.stdout


@pytest.mark.parametrize("threshold", ["0", "100", "4096"])
def test_fusion_thresholds(hvdrun, threshold):
    """Off, smaller than most tensors, and a few tensors per buffer."""
    import os
    env = dict(os.environ, HOROVOD_FUSION_THRESHOLD=threshold)
    result = hvdrun(["-np", "3", PYTHON,
                     str(WORKERS / "collectives_worker.py")], timeout=180,
                    env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_collectives_across_two_hosts(hvdrun):
    result = hvdrun(["-H", "localhost:2,127.0.0.1:2", PYTHON,
                     str(WORKERS / "collectives_worker.py")], timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("np_", [2, 3])
def test_mismatch_fails_on_every_rank(hvdrun, np_):
    result = hvdrun(["-np", str(np_), PYTHON,
                     str(WORKERS / "mismatch_worker.py")], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(np_):
        lines = stdout_of(result, rank)
        assert len([l for l in lines if l.startswith("mismatch ")]) == 6, lines
        assert lines[-1] == "still working", lines
    shape = [l for l in stdout_of(result, 0) if l.startswith("mismatch the shape:")]
    assert shape == [f"mismatch the shape: allreduce 't.shape': ranks disagree on "
                     f"the shape: rank 0 has [4]; rank {np_ - 1} has [3]"]


def test_killed_worker_makes_the_others_raise(hvdrun):
    started = time.monotonic()
    result = hvdrun(["-np", "3", PYTHON,
                     str(WORKERS / "killed_peer_worker.py")], timeout=120)
    elapsed = time.monotonic() - started
    assert result.returncode != 0
    assert "rank 1 on host localhost was killed by signal 9" in result.stderr, \
        result.stderr
    for rank in (0, 2):
        lines = stdout_of(result, rank)
        assert any("HorovodInternalError" in l for l in lines), \
            result.stdout + result.stderr
        assert f"rank {rank}: later collective failed too" in lines
    # The survivors exit by themselves well before hvdrun's SIGKILL grace
    # period would end the job for them.
    assert elapsed < 30, elapsed


def test_hvd_imports_without_torch(tmp_path):
    import subprocess
    script = ("import sys; sys.modules['torch'] = None\n"
              "import hvd, numpy\n"
              "hvd.init(); print(hvd.size(), hvd.allreduce(numpy.ones(2)))\n")
    result = subprocess.run([PYTHON, "-c", script], capture_output=True,
                            text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 [1. 1.]"


def test_bad_arguments_are_value_errors(tmp_path):
    import subprocess
    script = """
import numpy as np, hvd
hvd.init()
for call in (lambda: hvd.allreduce(np.ones(2, np.complex64)),
             lambda: hvd.allgather(np.float32(1)),
             lambda: hvd.broadcast(np.ones(2), 3),
             lambda: hvd.allreduce(np.ones(2), op=17)):
    try:
        call()
    except ValueError as e:
        print("ValueError:", e)
hvd.shutdown()
try:
    hvd.rank()
except ValueError as e:
    print("ValueError:", e)
"""
    result = subprocess.run([PYTHON, "-c", script], capture_output=True,
                            text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 5, result.stdout
    assert "unsupported dtype complex64" in lines[0]
    assert "at least one dimension" in lines[1]
    assert "root rank 3 is not in [0, 1)" in lines[2]
    assert "unknown reduce op 17" in lines[3]
    assert "not initialized" in lines[4]


def test_a_name_in_flight_is_refused_and_free_once_completed(
        hvdrun, tmp_path):
    """Rank 1 submits 'dup' only after rank 0 has tried it twice (their
    'ready' allreduce orders it), so rank 0's first 'dup' is surely still in
    flight when it tries again."""
    script = tmp_path / "dup.py"
    script.write_text("""
import numpy as np, hvd
hvd.init()
if hvd.rank() == 0:
    h = hvd.allreduce_async(np.ones(2), name="dup")
    try:
        hvd.allreduce_async(np.ones(2), name="dup")
    except ValueError as e:
        print("ValueError:", e)
    hvd.allreduce(np.ones(1), name="ready")
    print("first:", hvd.synchronize(h))
else:
    hvd.allreduce(np.ones(1), name="ready")
    hvd.allreduce(np.ones(2), name="dup")
print("again:", hvd.allreduce(np.ones(2), name="dup", op=hvd.Sum))
""")
    result = hvdrun(["-np", "2", PYTHON, str(script)], timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = stdout_of(result, 0)
    assert len(lines) == 3, result.stdout
    assert lines[0].startswith("ValueError: a collective named 'dup' is "
                               "already in flight on this rank"), lines
    assert lines[1:] == ["first: [1. 1.]", "again: [2. 2.]"], lines


@pytest.mark.parametrize("np_", [1, 2])
def test_init_and_shutdown_repeat_without_leaks(hvdrun, np_):
    result = hvdrun(["-np", str(np_), PYTHON,
                     str(WORKERS / "reinit_worker.py")], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(np_):
        assert stdout_of(result, rank)[0].startswith(f"rank {rank}: 12 cycles")


def test_hung_peer_times_out_into_internal_error(hvdrun, tmp_path):
    import os
    env = dict(os.environ, HOROVOD_GLOO_TIMEOUT_SECONDS="2")
    result = hvdrun(["-np", "2", PYTHON, str(WORKERS / "hung_peer_worker.py"),
                     str(tmp_path / "pid")], timeout=60, env=env)
    lines = stdout_of(result, 0)
    assert len(lines) == 1, result.stdout + result.stderr
    match = re.match(r"rank 0 step 3: HorovodInternalError after ([0-9.]+) s: "
                     r".*Timed out.*--gloo-timeout-seconds", lines[0])
    assert match, lines[0]
    assert 1.5 <= float(match.group(1)) < 10, lines[0]
    assert "rank 1 on host localhost was killed by signal 9" in result.stderr


def test_gil_is_released_while_waiting(hvdrun, tmp_path):
    """A Python thread of rank 0 keeps running while rank 0's main thread
    waits on a collective: rank 1 joins the collective only once that
    thread has ticked 200 times during the wait, which it cannot do if the
    wait holds the GIL."""
    script = tmp_path / "gil.py"
    script.write_text(f"""
import os, sys, threading, time
import numpy as np
import hvd
hvd.init()
ticking = {str(tmp_path / "ticking")!r}
ticks = 0
before = None
def count():
    global ticks
    while True:
        ticks += 1
        if before is not None and ticks - before == 200:
            open(ticking, "w").close()
        time.sleep(0.001)
if hvd.rank() == 0:
    threading.Thread(target=count, daemon=True).start()
    before = ticks  # from here the main thread only enters the allreduce
else:
    deadline = time.monotonic() + 30
    while not os.path.exists(ticking):
        if time.monotonic() > deadline:
            sys.exit("rank 0's thread did not tick 200 times in 30 s while "
                     "rank 0 waited in the allreduce: the wait holds the GIL")
        time.sleep(0.01)
hvd.allreduce(np.ones(4), name="late")
if hvd.rank() == 0:
    print(f"ticks {{ticks - before}}", flush=True)
""")
    result = hvdrun(["-np", "2", PYTHON, str(script)], timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    ticks = int(stdout_of(result, 0)[0].split()[1])
    assert ticks >= 200, ticks


def test_ranks_seen_from_python_on_two_hosts(hvdrun, tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text("""
import hvd.torch as hvd
hvd.init()
print(hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(),
      hvd.cross_rank(), hvd.cross_size(), flush=True)
""")
    result = hvdrun(["-H", "localhost:2,127.0.0.1:1", PYTHON, str(script)],
                    timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert stdout_of(result, 0) == ["0 3 0 2 0 2"]
    assert stdout_of(result, 1) == ["1 3 1 2 0 1"]
    assert stdout_of(result, 2) == ["2 3 0 1 1 2"]
