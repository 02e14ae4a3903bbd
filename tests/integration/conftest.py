"""Fixtures for end-to-end tests that run the real hvdrun binary.

Every hvdrun started here runs in its own session with a hard timeout, and
whatever it leaves behind is killed when the test ends.
"""

import os
import pathlib
import signal
import subprocess

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
