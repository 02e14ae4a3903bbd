"""A worker step's launch message on the wire (issue 33): under Slurm,
srun carries a step's standard input in clear TCP to slurmstepd, so hvdrun
seals the message with MUNGE. On the bed's real Slurm and munged, with
tcpdump in the network namespace of hvdrun's node (where srun runs, so
every step's traffic passes it), a job's worker keys and a variable set
for the job are nowhere in the capture; a recorded message fed to a new
step is refused as replayed, and a plain one as plain."""

import json
import pathlib
import secrets
import shlex
import signal
import subprocess
import threading

import pytest

from conftest import HVDRUN, wait_until
from test_slurm import PYTHON

WORKER = (pathlib.Path(__file__).resolve().parent / "workers" /
          "sealed_launch_worker.py")
NP = 4

# Records each srun that hvdrun starts (its words, and for a worker step
# the bytes hvdrun writes to its input), then becomes the real srun: the
# same pid, so hvdrun's signals reach it.
RECORDING_SRUN = """#!/bin/bash
name="$(date +%s%N)-$$"
printf '%s\\n' "$@" >"$HVD_TEST_RECORD/$name.argv"
case " $* " in
  *" --hvd-internal-remote-guard "*)
    exec /usr/bin/srun "$@" < <(tee "$HVD_TEST_RECORD/$name.in") ;;
esac
exec /usr/bin/srun "$@"
"""

# The batch script: the job (its canary read from a file, so that neither
# the script nor sbatch's environment carries it), then two steps that
# start a guard as hvdrun does, one fed a message a worker step already
# used, one a plain message.
BATCH = """set -u
export PATH="$HVD_TEST_RECORD/bin:$PATH"
HVD_TEST_CANARY="$(cat canary)" {hvdrun} -np {np} {python} {worker}
echo "job exit $?"
argv="$(grep -l -- --hvd-internal-remote-guard "$HVD_TEST_RECORD"/*.argv |
  head -n 1)"
mapfile -t words <"$argv"
/usr/bin/srun "${{words[@]}}" <"${{argv%.argv}}.in" >replayed.out 2>&1
echo "replay exit $?"
printf '3\\nabc' | /usr/bin/srun "${{words[@]}}" >plain.out 2>&1
echo "plain exit $?"
"""


class Capture:
    """tcpdump on every interface of one bed host's network namespace."""

    def __init__(self, host, path):
        self.path = path
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", host, "tcpdump", "-i", "any", "-U",
             "-s", "0", "-w", str(path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        self.listening = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.listening.wait(timeout=20):
            self.stop()
            pytest.fail("tcpdump did not start capturing: "
                        + "".join(self.stderr), pytrace=False)

    def _read(self):
        for line in self.proc.stderr:
            self.stderr.append(line)
            if "listening on" in line:
                self.listening.set()

    def stop(self):
        """Stops tcpdump (SIGINT: it writes what it holds) and returns the
        capture's bytes."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=20)
        self.reader.join(timeout=5)
        return self.path.read_bytes() if self.path.exists() else b""


def test_a_worker_steps_launch_message_is_sealed_on_the_wire(
        bed, slurm, tmp_path):
    hosts = bed.up(2)
    slurm.up()
    canary = secrets.token_hex(16)
    (tmp_path / "canary").write_text(canary)
    record = tmp_path / "record"
    (record / "bin").mkdir(parents=True)
    srun = record / "bin" / "srun"
    srun.write_text(RECORDING_SRUN)
    srun.chmod(0o755)
    script = BATCH.format(hvdrun=shlex.quote(str(HVDRUN)), np=NP,
                          python=PYTHON, worker=shlex.quote(str(WORKER)))
    (tmp_path / "batch.sh").write_text(script)

    capture = Capture(hosts[0], tmp_path / "steps.pcap")
    try:
        job = slurm.sbatch(tmp_path, "bash batch.sh", "--nodes=2",
                           "--ntasks-per-node=2",
                           env={"HVD_TEST_RECORD": str(record)})
        slurm.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                               "NODE_FAIL"}, timeout=180)
    finally:
        wire = capture.stop()
    output = slurm.output(tmp_path, job)
    assert "job exit 0" in output, output

    # What reached the workers through their launch messages.
    given = [json.loads((tmp_path / f"given.{rank}.json").read_text())
             for rank in range(NP)]
    keys = {g["HVD_WORKER_KEY"] for g in given}
    assert len(keys) == NP and all(keys), given
    assert all(g["HVD_TEST_CANARY"] == canary for g in given), given

    # The capture holds the steps' traffic: each worker step's launch
    # request (its command line is not secret) and its sealed input.
    assert len(wire) > 10000, len(wire)
    assert wire.count(b"--hvd-internal-remote-guard") >= NP, len(wire)
    assert b"MUNGE:" in wire, len(wire)
    # ... and neither a worker's key nor the job's variable (before the
    # seal, each was there: in the plain message and, for the variable,
    # in srun's launch request too).
    assert wire.count(canary.encode()) == 0, "the job's variable is there"
    assert [wire.count(key.encode()) for key in keys] == [0] * NP, \
        "a worker's key is there"

    # Each worker step's input began with a sealed frame, and its guard's
    # command line named the bed's munged (Slurm's AuthInfo), not
    # libmunge's default.
    socket = str(bed.dir / "slurm" / "munge" / "munge.sock")
    inputs = sorted(record.glob("*.in"))
    assert len(inputs) == NP, inputs
    for path in inputs:
        assert path.read_bytes().startswith(b"munge "), path
        argv = path.with_suffix(".argv").read_text().split("\n")
        assert argv[-3:-1] == ["munge", socket], argv
        assert "--export=NONE" in argv, argv

    # A recorded message, fed to a new step's guard: munged refuses it.
    assert "replay exit 1" in output, output
    replayed = (tmp_path / "replayed.out").read_text()
    assert "Replayed credential" in replayed, replayed
    assert "decoded once already" in replayed, replayed
    # A plain message to a step's guard: refused before anything starts.
    assert "plain exit 1" in output, output
    plain = (tmp_path / "plain.out").read_text()
    assert "refused a plain launch message" in plain, plain
    wait_until(lambda: slurm.state(job) == "COMPLETED",
               f"job {job} to be COMPLETED", timeout=10)


def guard(*words, message):
    """hvdrun's remote guard run here with `message` on its input, as a
    step would start it (remote_guard.h); (exit code, stderr)."""
    result = subprocess.run(
        [str(HVDRUN), "--hvd-internal-remote-guard", "1000", "1000", "5000",
         *words], input=message, capture_output=True, timeout=30)
    return result.returncode, result.stderr.decode()


def test_each_guard_takes_only_its_own_kind_of_message(tmp_path):
    missing = str(tmp_path / "no-munged.sock")
    # A step's guard refuses a plain message before it asks munged.
    code, err = guard("munge", missing, message=b"3\nabc")
    assert code == 1 and "refused a plain launch message" in err, err
    assert "MUNGE-sealed" in err, err
    # The ssh guard refuses a sealed one.
    code, err = guard(message=b"munge 10\nMUNGE:xyz:")
    assert code == 1, err
    assert "refused a MUNGE-sealed launch message" in err, err
    # A sealed one without munged: what was tried, and what to do.
    code, err = guard("munge", missing, message=b"munge 10\nMUNGE:xyz:")
    assert code == 1 and missing in err, err
    assert "munged" in err, err
    # A malformed length line.
    code, err = guard("munge", missing, message=b"munge x\n")
    assert code == 1 and "length line is malformed" in err, err
