"""Fixtures for end-to-end tests that run the real hvdrun binary.

Every hvdrun started here runs in its own session with a hard timeout, and
whatever it leaves behind is killed when the test ends.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HVDRUN = ROOT / "build" / "launcher" / "hvdrun"


@pytest.fixture
def hvdrun():
    """run(args, timeout=60, **popen) -> CompletedProcess of hvdrun."""
    if not HVDRUN.exists():
        pytest.fail(f"{HVDRUN} is missing: run scripts/setup.sh first")
    started = []

    def run(args, timeout=60, **kwargs):
        proc = subprocess.Popen([str(HVDRUN), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                start_new_session=True, **kwargs)
        started.append(proc)
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def start(args, **kwargs):
        proc = subprocess.Popen([str(HVDRUN), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                start_new_session=True, **kwargs)
        started.append(proc)
        return proc

    run.start = start
    yield run
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def rank_lines(text, rank, stream="stdout"):
    """The lines hvdrun relayed from `rank`'s `stream`, prefix removed."""
    prefix = f"[{rank}]<{stream}>:"
    return [l[len(prefix):] for l in text.splitlines() if l.startswith(prefix)]


TORCH_PRELUDE = """\
import json
import sys
import torch
import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
R = {}
"""

TORCH_EPILOGUE = """
print("RESULT " + json.dumps(R), flush=True)
"""


def run_torch_workers(hvdrun, tmp_path, body, np=2, args=(),
                      name="worker.py", timeout=180):
    """Runs TORCH_PRELUDE + body + TORCH_EPILOGUE on `np` workers through
    hvdrun; each worker fills the dict R. Returns {rank: R}; any failure
    fails the test with hvdrun's whole output."""
    script = tmp_path / name
    script.write_text(TORCH_PRELUDE + textwrap.dedent(body) + TORCH_EPILOGUE)
    result = hvdrun(["-np", str(np), sys.executable, str(script),
                     *map(str, args)], timeout=timeout)
    output = (f"hvdrun exited {result.returncode}\n--- stdout\n"
              f"{result.stdout}\n--- stderr\n{result.stderr}")
    assert result.returncode == 0, output
    results = {}
    for rank in range(np):
        lines = [l[len("RESULT "):] for l in rank_lines(result.stdout, rank)
                 if l.startswith("RESULT ")]
        assert len(lines) == 1, output
        results[rank] = json.loads(lines[0])
    return results
