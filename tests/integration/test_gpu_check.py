"""The GPU machine's prepared check (scripts/gpu/, docs/gpu.md "The device
check"), rehearsed here: the bundle is made and fits what the device tool
carries, and device-check.sh runs every stage from the bundle alone, the
GPU stages saying "no GPU" where there is none, each under a deadline."""

import os
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT

GPU_SCRIPTS = ROOT / "scripts" / "gpu"
BUNDLE = ROOT / "gpu-bundle"
# run_stage NAME DEADLINE any|gpu FUNCTION, as device-check.sh writes them.
STAGE_LINE = re.compile(r"^\s*run_stage (\S+) (\d+) (any|gpu) (stage_\w+)$",
                        re.M)

pytestmark = pytest.mark.skipif(
    not (ROOT / "build" / "tests" / "gpu").is_dir(),
    reason="the build has no NCCL backend (HVD_WITH_NCCL, docs/gpu.md), so "
           "there are no GPU tests to bundle")


def stages():
    """(name, deadline, needs, function) of every stage, in order."""
    return STAGE_LINE.findall((GPU_SCRIPTS / "device-check.sh").read_text())


@pytest.fixture(scope="module")
def bundle():
    """scripts/gpu/bundle.sh's output line, once for the module."""
    done = subprocess.run([str(GPU_SCRIPTS / "bundle.sh")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def check(out, seconds=None, timeout=300):
    """Runs the rehearsal into `out`; (exit status, results lines, wall
    seconds)."""
    env = dict(os.environ, OUT=str(out), HVD_PYTHON=sys.executable)
    if seconds is not None:
        env["HVD_CHECK_SECONDS"] = str(seconds)
    start = time.monotonic()
    done = subprocess.run([str(GPU_SCRIPTS / "device-check.sh"), "--rehearse"],
                          env=env, capture_output=True, text=True,
                          timeout=timeout)
    took = time.monotonic() - start
    return done.returncode, (out / "results.txt").read_text().splitlines(), took


def test_the_bundle_fits_what_the_device_tool_carries(bundle):
    m = re.search(r"with the tree: ([0-9.]+) MiB of 64.0 MiB", bundle)
    assert m, bundle
    assert float(m.group(1)) < 64, bundle
    for path in ("build/launcher/hvdrun", "build/tests/gpu/nccl_gpu_test",
                 "build/scripts/bench/allreduce/hvd_gloo_allreduce_bench",
                 "ext/libhvd_runtime.a", "ext/flags.sh", "lib/libgloo.so.0",
                 "include/spdlog/spdlog.h", "pybind11/pybind11/pybind11.h"):
        assert (BUNDLE / path).is_file(), path
    assert re.search(r"^sources: [0-9a-f]{16}$",
                     (BUNDLE / "MANIFEST").read_text(), re.M)


def test_every_stage_has_a_deadline_inside_the_call():
    found = stages()
    defined = set(re.findall(r"^(stage_\w+)\(\) \{",
                             (GPU_SCRIPTS / "device-check.sh").read_text(),
                             re.M))
    assert {f for _, _, _, f in found} == defined
    default = re.search(r'total="\$\{HVD_CHECK_SECONDS:-(\d+)\}"',
                        (GPU_SCRIPTS / "device-check.sh").read_text())
    # The device tool's one command runs 10 minutes at most.
    assert default and int(default.group(1)) <= 540
    for name, deadline, _, _ in found:
        assert 0 < int(deadline) <= int(default.group(1)), name


def test_the_rehearsal_runs_every_stage_from_the_bundle(bundle, tmp_path):
    rc, lines, _ = check(tmp_path)
    log = (tmp_path / "device-check.log").read_text()
    assert rc == 0, "\n".join(lines) + "\n" + log[-4000:]
    gpu = any(re.match(r"machine: ok .*NVIDIA", l) for l in lines)
    for name, _, needs, _ in stages():
        line = next((l for l in lines if l.startswith(name + ": ")), None)
        assert line, (name, lines)
        if needs == "gpu" and not gpu:
            assert line.startswith(f"{name}: no GPU ("), line
        else:
            assert re.match(rf"{name}: ok \(\d+ s\)", line), line
    assert "import hvd.torch: ok" in log
    for bench in ("allreduce", "fusion"):
        report = (tmp_path / f"{bench}-report.md").read_text()
        assert "/ gloo" in report, report
        assert (tmp_path / f"{bench}-results.jsonl").stat().st_size > 0


def test_the_whole_deadline_ends_the_check_in_time(bundle, tmp_path):
    rc, lines, took = check(tmp_path, seconds=30)
    assert rc == 1, lines
    assert any("NOT RUN" in l or "TIMED OUT" in l for l in lines), lines
    # The deadline, the kill's grace and the script's own steps.
    assert took < 30 + 15, (took, lines)
