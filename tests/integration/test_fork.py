"""A process forked from an initialized hvd worker, through the real hvdrun.

The fork has a copy of hvd's state but none of its threads: a collective
there must raise ForkedProcessError at once (it used to hang forever),
hvd.shutdown() there must return, and hvd.init() there must either start a
job of the fork's own or refuse clearly; the parent goes on training.
"""

import json
import sys
import textwrap

from conftest import rank_lines

PRELUDE = r'''
import json
import os
import select
import signal
import sys

import numpy as np
import hvd

def wait_child(pid, seconds=60):
    """The child's wait status, or "hung" (then killed) after `seconds`."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], seconds)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hung"
        return os.waitpid(pid, 0)[1]
    finally:
        os.close(fd)

def report(**fields):
    print("REPORT " + json.dumps(fields), flush=True)

def attempt(name, call):
    """Runs call(); reports how it ended."""
    try:
        value = call()
        report(step=name, pid=os.getpid(), ok=True, value=repr(value))
    except Exception as e:
        report(step=name, pid=os.getpid(), ok=False,
               error=type(e).__name__, message=str(e))

hvd.init()
parent = os.getpid()
before = hvd.allreduce(np.full(3, hvd.rank() + 1.0), op=hvd.Sum, name="before")
'''

STATIC_BODY = r'''
child = os.fork()
if child == 0:
    attempt("allreduce", lambda: hvd.allreduce(np.ones(3), name="in_fork"))
    attempt("init_without_shutdown", hvd.init)
    attempt("shutdown", hvd.shutdown)
    attempt("init_in_parents_job", hvd.init)
    for name in [k for k in os.environ if k.startswith("HOROVOD_")]:
        del os.environ[name]
    attempt("init_alone", hvd.init)
    attempt("allreduce_alone",
            lambda: hvd.allreduce(np.ones(2), name="alone").tolist())
    sys.exit(0)  # the interpreter's exit runs hvd's atexit shutdown
report(step="child", pid=child, status=wait_child(child))

# A fork that leaves without hvd.shutdown(): its exit must not hang either.
child = os.fork()
if child == 0:
    attempt("allreduce", lambda: hvd.allreduce(np.ones(3), name="in_fork"))
    sys.exit(0)
report(step="second_child", pid=child, status=wait_child(child))

after = hvd.allreduce(np.full(3, hvd.rank() + 1.0), op=hvd.Sum, name="after")
report(step="parent", pid=parent, before=before.tolist(), after=after.tolist())
'''

ELASTIC_BODY = r'''
child = os.fork()
if child == 0:
    attempt("allreduce", lambda: hvd.allreduce(np.ones(3), name="in_fork"))
    attempt("shutdown", hvd.shutdown)
    attempt("init_in_parents_job", hvd.init)
    sys.exit(0)
report(step="child", pid=child, status=wait_child(child))
after = hvd.allreduce(np.full(3, hvd.rank() + 1.0), op=hvd.Sum, name="after")
report(step="parent", pid=parent, before=before.tolist(), after=after.tolist())
'''


def reports(out, rank):
    """{step: fields} of what `rank` and its forks reported (a step of the
    second fork is prefixed "second:")."""
    found = {}
    lines = [l for l in rank_lines(out, rank) if l.startswith("REPORT ")]
    second_child = None
    for line in lines:
        fields = json.loads(line[len("REPORT "):])
        if fields["step"] == "second_child":
            second_child = fields["pid"]
    for line in lines:
        fields = json.loads(line[len("REPORT "):])
        key = fields["step"]
        if second_child is not None and fields.get("pid") == second_child \
                and key != "second_child":
            key = "second:" + key
        found[key] = fields
    return found


def run_script(hvdrun, tmp_path, body, args):
    script = tmp_path / "fork_worker.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    result = hvdrun([*args, sys.executable, str(script)], timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def assert_fork_error(step, parent, child):
    assert step["ok"] is False, step
    assert step["error"] == "ForkedProcessError", step
    assert f"process {parent};" in step["message"], step
    assert f"(pid {child})" in step["message"], step
    assert "hvd.init()" in step["message"], step


def test_collectives_in_a_fork_raise_and_the_parent_goes_on(hvdrun, tmp_path):
    result = run_script(hvdrun, tmp_path, STATIC_BODY,
                        ["-np", "2", "--start-timeout", "20"])
    for rank in (0, 1):
        r = reports(result.stdout, rank)
        parent = r["parent"]["pid"]
        child = r["child"]["pid"]
        assert r["child"]["status"] == 0, r
        assert r["second_child"]["status"] == 0, r
        assert_fork_error(r["allreduce"], parent, child)
        assert_fork_error(r["second:allreduce"], parent,
                          r["second_child"]["pid"])
        # init() keeps the parent's runtime until shutdown() gives it up.
        assert_fork_error(r["init_without_shutdown"], parent, child)
        assert r["shutdown"]["ok"], r["shutdown"]
        # The fork cannot take its parent's rank in the parent's job...
        refused = r["init_in_parents_job"]
        assert refused["error"] == "ForkedProcessError", refused
        assert f"fork of rank {rank} of the job" in refused["message"]
        # ...but runs a job of its own.
        assert r["init_alone"]["ok"], r["init_alone"]
        assert r["allreduce_alone"]["value"] == "[1.0, 1.0]"
        # The parent's collectives still work.
        assert r["parent"]["before"] == [3.0, 3.0, 3.0]
        assert r["parent"]["after"] == [3.0, 3.0, 3.0]


def test_fork_of_an_elastic_worker_cannot_take_its_slot(hvdrun, tmp_path):
    result = run_script(
        hvdrun, tmp_path, ELASTIC_BODY,
        ["-np", "2", "--min-np", "2", "-H", "localhost:2",
         "--elastic-timeout", "60", "--start-timeout", "20"])
    for rank in (0, 1):
        r = reports(result.stdout, rank)
        parent = r["parent"]["pid"]
        child = r["child"]["pid"]
        assert r["child"]["status"] == 0, r
        assert_fork_error(r["allreduce"], parent, child)
        assert r["shutdown"]["ok"], r["shutdown"]
        refused = r["init_in_parents_job"]
        assert refused["error"] == "ForkedProcessError", refused
        assert f"fork of elastic worker {parent}" in refused["message"]
        assert r["parent"]["after"] == [3.0, 3.0, 3.0]
