"""The status page in a real browser during an elastic job on the test bed
(scripts/cluster/): a host joins, a worker is killed, a host is partitioned.
Debian's chromium, driven by playwright-core (tests/browser/), must show the
right generation, ranks, blacklisted hosts and recoveries with their phases;
/metrics (prometheus_client's parser) and `hvdrun status` must agree. The
page's screenshot is kept in test-artifacts/ (HVD_TEST_ARTIFACTS)."""

import json
import os
import pathlib
import re
import signal
import subprocess

from conftest import HVDRUN, ROOT, wait_until
from test_bed_jobs import pids_in_logs
from test_elastic import Scenario
from test_status import metrics, status, status_url

BROWSER = ROOT / "tests" / "browser"
ARTIFACTS = pathlib.Path(os.environ.get("HVD_TEST_ARTIFACTS",
                                        ROOT / "test-artifacts"))


def newest_complete(url, size):
    """The status once its newest generation has `size` ranks and every
    slot checked in."""
    now = status(url)
    gens = now["generations"]
    if gens and gens[-1]["size"] == size and gens[-1]["complete_ms"]:
        return now
    return None


def test_status_page_in_a_browser_through_join_kill_and_partition(
        bed, hvdrun, tmp_path):
    a, b, c = bed.up(3)
    s = Scenario(tmp_path, f"{a}:2\n{b}:2\n", epochs=400, batches=10,
                 sleep=0.02)
    child = hvdrun.start(["-np", "4", "--min-np", "2",
                          "--host-discovery-script", str(s.discover),
                          "--discovery-interval", "0.3", *s.command()],
                         cwd=tmp_path)
    url = status_url(child)
    wait_until(lambda: newest_complete(url, 4), "4 ranks on a and b",
               timeout=90)

    # A host joins.
    s.hosts_file.write_text(f"{a}:2\n{b}:2\n{c}:2\n")
    wait_until(lambda: newest_complete(url, 6), "6 ranks after c joined",
               timeout=90)
    # A worker is killed (on c: the pid its log file names, a real worker
    # process in c's network namespace).
    victim = wait_until(lambda: pids_in_logs(s.log, c), "c's workers' logs")
    os.kill(min(victim), signal.SIGKILL)
    wait_until(lambda: newest_complete(url, 4), "4 ranks after the kill",
               timeout=90)
    # A host is partitioned.
    bed.ctl("partition", b)
    def reported(now):
        # ... and the survivors reported their recovery into it.
        return now if now and now["recoveries"][-1]["reported_ranks"] == 2 \
            else None
    now = wait_until(lambda: reported(newest_complete(url, 2)),
                     "2 ranks after b was partitioned, reported", timeout=90)
    generation = now["job"]["generation"]

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "status-page-bed.png"
    shown = subprocess.run(
        ["node", str(BROWSER / "status_page.mjs"), url, str(generation),
         str(screenshot), "60"],
        capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    page = json.loads(shown.stdout)
    assert page["pageErrors"] == []
    assert page["generation"] == generation and page["size"] == 2, page
    assert page["state"] == "running"
    assert [r["slot"] for r in page["ranks"]] == [f"{a}:0", f"{a}:1"]
    assert all(r["pid"] > 0 for r in page["ranks"]), page["ranks"]
    assert all(r["age"].endswith(" ago") for r in page["ranks"]), page["ranks"]
    assert page["hosts"][a]["state"] == "running", page["hosts"]
    for host in (b, c):
        assert page["hosts"][host]["state"] == "blacklisted", page["hosts"]
    causes = [r["cause"] for r in reversed(page["recoveries"])]
    assert causes[0] == "start" and "hosts" in causes, causes
    assert causes.count("failure") == 2, page["recoveries"]
    # The partition's recovery, with its phases measured.
    last = page["recoveries"][0]
    assert last["generation"] == generation and last["cause"] == "failure"
    assert last["complete"] and last["bars"] >= 2, last
    for phase in ("detect", "decide", "rendezvous", "connect", "sync",
                  "first_step"):
        assert re.fullmatch(r"[\d.]+ (ms|s)", last["phases"][phase]), last
    assert b in last["reason"], last
    failed_hosts = {f["host"] for f in page["failures"]}
    assert failed_hosts == {b, c}, page["failures"]
    assert screenshot.stat().st_size > 10000
    # Nothing on the page may change the job.
    assert set(page["writes"].values()) == {405}, page["writes"]

    m = metrics(url)
    assert m[("hvd_generation", ())] == generation
    assert m[("hvd_world_size", ())] == 2
    assert m[("hvd_resets_total", (("cause", "failure"),))] == 2
    assert m[("hvd_resets_total", (("cause", "hosts"),))] == 1
    assert m[("hvd_worker_failures_total", ())] == 2
    assert m[("hvd_hosts", (("state", "blacklisted"),))] == 2
    assert m[("hvd_recovery_phase_seconds_count",
              (("phase", "rendezvous"),))] == generation

    text = subprocess.run([str(HVDRUN), "status", url], capture_output=True,
                          text=True, timeout=30)
    assert text.returncode == 0, text.stderr
    assert f"job: running, generation {generation}, 2 ranks, 3 resets, " \
        "2 failures" in text.stdout, text.stdout
    for host in (b, c):
        assert re.search(rf"{host}\s+2\s+blacklisted", text.stdout), text.stdout

    child.send_signal(signal.SIGINT)
    child.finish(timeout=60)
