"""The runtime's performance machinery end to end through hvdrun: the new
collectives under every cache and fusion setting, join, process sets, the
response cache's effect on negotiation, and the stall inspector."""

import json
import os
import re
import signal

import pytest

from conftest import ROOT, rank_lines, wait_until

WORKERS = ROOT / "tests" / "integration" / "workers"
PYTHON = "/usr/bin/python3"


def run_worker(hvdrun, np_, worker, *args, env=None, timeout=180):
    environment = dict(os.environ, **(env or {}))
    result = hvdrun(["-np", str(np_), PYTHON, str(WORKERS / worker),
                     *args], timeout=timeout, env=environment)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def assert_checks_passed(result, np_):
    for rank in range(np_):
        lines = rank_lines(result.stdout, rank)
        assert any(re.fullmatch(rf"rank {rank}(/{np_})?: \d+ checks passed",
                                line) for line in lines), result.stdout


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_new_ops_match_numpy(hvdrun, np_):
    assert_checks_passed(run_worker(hvdrun, np_, "ops_worker.py", "ops"), np_)


SETTINGS = {
    "cache-off": {"HOROVOD_CACHE_CAPACITY": "0"},
    "cache-of-3": {"HOROVOD_CACHE_CAPACITY": "3"},  # evicts all the time
    "fusion-off": {"HOROVOD_FUSION_THRESHOLD": "0"},
    "fusion-64-bytes": {"HOROVOD_FUSION_THRESHOLD": "64"},
    "group-fusion-off": {"HOROVOD_DISABLE_GROUP_FUSION": "1"},
    "cache-and-fusion-off": {"HOROVOD_CACHE_CAPACITY": "0",
                             "HOROVOD_FUSION_THRESHOLD": "0"},
}


@pytest.mark.parametrize("setting", SETTINGS)
def test_every_op_gives_the_same_results_under(hvdrun, setting):
    env = SETTINGS[setting]
    for worker, args in [("ops_worker.py", ["ops"]),
                         ("ops_worker.py", ["join"]),
                         ("collectives_worker.py", [])]:
        assert_checks_passed(run_worker(hvdrun, 3, worker, *args, env=env), 3)


@pytest.mark.parametrize("np_", [2, 3, 4])
def test_join_with_uneven_steps(hvdrun, np_):
    assert_checks_passed(run_worker(hvdrun, np_, "ops_worker.py", "join"),
                         np_)


def steady_stats(hvdrun, env):
    result = run_worker(hvdrun, 2, "steady_worker.py", env=env)
    stats = []
    for rank in range(2):
        line = [l for l in rank_lines(result.stdout, rank)
                if l.startswith("STATS ")]
        assert len(line) == 1, result.stdout
        stats.append(json.loads(line[0][len("STATS "):]))
    return stats


def test_steady_training_loop_skips_the_coordinator(hvdrun):
    """27 steps of 10 named allreduces after warm-up: every one answered by
    the response cache, not one coordinator round."""
    for stats in steady_stats(hvdrun, {}):
        assert stats["coordinator_rounds"] == 0, stats
        assert stats["cache_hits"] == 27 * 10, stats
        assert stats["cycles"] > 0, stats
        assert stats["negotiation_seconds"] > 0, stats


def test_without_the_cache_every_cycle_asks_the_coordinator(hvdrun):
    for stats in steady_stats(hvdrun, {"HOROVOD_CACHE_CAPACITY": "0"}):
        assert stats["cache_hits"] == 0, stats
        assert stats["coordinator_rounds"] == stats["cycles"] > 0, stats
        assert stats["negotiation_seconds"] > 0, stats


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_process_sets(hvdrun, mode):
    env = {"HOROVOD_DYNAMIC_PROCESS_SETS": "1"} if mode == "dynamic" else {}
    result = run_worker(hvdrun, 4, "process_sets_worker.py", mode, env=env)
    assert_checks_passed(result, 4)
    refusals = rank_lines(result.stdout, 0)
    assert "refused an op in a set without this rank: rank 0 is not in " \
           "process set 2 (ranks [2, 3])" in refusals, refusals
    if mode == "dynamic":
        for rank in range(4):
            assert "refused a set that exists: a process set with ranks " \
                   "[0, 2] exists already (id 5)" in \
                   rank_lines(result.stdout, rank)


@pytest.mark.parametrize("mode", ["fresh", "cached"])
def test_stall_warns_names_the_rank_and_shuts_down(hvdrun, mode):
    """Rank 1 sleeps 8 s outside hvd while rank 0 waits in an allreduce.
    The inspector warns after 1 s naming rank 1, and after 3 s every rank's
    collectives fail with HorovodInternalError, long before the sleep ends
    on rank 0. "cached": rank 0's request is a response cache hit, which
    only reaches the coordinator because it stalled."""
    env = {"HOROVOD_STALL_CHECK_TIME_SECONDS": "1",
           "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3"}
    result = run_worker(hvdrun, 2, "stall_worker.py", mode, "8", env=env)
    warnings = [l for l in rank_lines(result.stderr, 0, "stderr")
                if "allreduce 'stuck': waiting" in l]
    assert warnings and all(l.endswith("for rank(s) 1") for l in warnings), \
        result.stderr
    for rank in range(2):
        out = rank_lines(result.stdout, rank)
        assert len(out) == 1 and out[0].startswith("internal error after "), \
            result.stdout
        assert "stall inspector" in out[0] and "'stuck'" in out[0], out
    seconds = float(rank_lines(result.stdout, 0)[0].split()[3])
    assert seconds < 7, result.stdout


def events_of(path):
    with open(path) as f:
        return json.load(f)  # the whole file must be valid JSON


def rows_of(events):
    """{row name: [activity names begun on it]}, and checks that every row's
    B/E events pair up."""
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    rows, depth = {}, {}
    for e in events:
        if e["ph"] == "B":
            rows.setdefault(names[e["pid"]], []).append(e["name"])
            depth[e["pid"]] = depth.get(e["pid"], 0) + 1
        elif e["ph"] == "E":
            depth[e["pid"]] -= 1
            assert depth[e["pid"]] >= 0, e
    return rows, depth


def test_timeline_records_every_activity_per_tensor(hvdrun, tmp_path):
    path = tmp_path / "timeline.json"
    env = {"HOROVOD_TIMELINE": str(path), "HOROVOD_TIMELINE_MARK_CYCLES": "1"}
    run_worker(hvdrun, 2, "timeline_worker.py", "steps", env=env)
    events = events_of(path)
    rows, depth = rows_of(events)
    assert set(rows) == {f"grad.{i}" for i in range(4)} | {"grad.ag"}, rows
    assert all(d == 0 for d in depth.values()), depth
    for i in range(4):
        activities = set(rows[f"grad.{i}"])
        assert {"NEGOTIATE_ALLREDUCE", "QUEUE", "MEMCPY_IN_FUSION_BUFFER",
                "ALLREDUCE", "MEMCPY_OUT_FUSION_BUFFER"} <= activities, \
            activities
        assert rows[f"grad.{i}"].count("ALLREDUCE") == 20
    assert "ALLGATHER" in rows["grad.ag"], rows["grad.ag"]
    assert any(e["ph"] == "i" and e["name"] == "CYCLE_START" for e in events)
    # A second job appends to the trace instead of replacing it.
    run_worker(hvdrun, 2, "timeline_worker.py", "steps", env=env)
    rows, _ = rows_of(events_of(path))
    assert rows["grad.0"].count("ALLREDUCE") == 40, rows["grad.0"]


@pytest.mark.parametrize("layout", ["views", "separate"])
def test_adjacent_tensors_are_reduced_without_the_fusion_buffer(
        hvdrun, tmp_path, layout):
    path = tmp_path / "timeline.json"
    result = run_worker(hvdrun, 2, "timeline_worker.py", layout,
                        env={"HOROVOD_TIMELINE": str(path)})
    assert_checks_passed(result, 2)
    rows, _ = rows_of(events_of(path))
    assert len(rows) == 4, rows
    for activities in rows.values():
        assert activities.count("ALLREDUCE") == 10, activities
        copies = activities.count("MEMCPY_IN_FUSION_BUFFER")
        assert copies == (0 if layout == "views" else 10), activities


def test_timeline_started_and_stopped_from_python(hvdrun, tmp_path):
    """With HOROVOD_TIMELINE=DYNAMIC (Horovod's "start it from the
    script"), init() writes no file; start_timeline(path) writes path."""
    path = tmp_path / "api.json"
    env = dict(os.environ, HOROVOD_TIMELINE="DYNAMIC")
    result = hvdrun(["-np", "2", PYTHON, str(WORKERS / "timeline_worker.py"),
                     "api", str(path)], timeout=180, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["api.json"]
    rows, depth = rows_of(events_of(path))
    assert set(rows) == {f"between.{i}" for i in range(4)} | {"between.ag"}, \
        rows
    assert rows["between.0"].count("ALLREDUCE") == 5, rows


def test_timeline_is_valid_json_after_rank_0_is_killed(hvdrun, tmp_path):
    path = tmp_path / "killed.json"
    env = dict(os.environ, HOROVOD_TIMELINE=str(path))
    job = hvdrun.start(["-np", "2", PYTHON,
                        str(WORKERS / "timeline_worker.py"), "forever"],
                       env=env)
    line = job.wait_for_line(lambda l: l.startswith("[0]<stdout>:running pid "),
                             "rank 0 to report its pid")
    rank_0 = int(line.split()[-1])

    def flushed_steps():
        """ALLREDUCEs of grad.0 in the file, once it parses (the writer may
        be in the middle of a write)."""
        try:
            rows, _ = rows_of(events_of(path))
        except (FileNotFoundError, json.JSONDecodeError):
            return 0
        return rows.get("grad.0", []).count("ALLREDUCE")

    wait_until(lambda: flushed_steps() >= 5,
               "the timeline writer to flush 5 steps of grad.0")
    os.kill(rank_0, signal.SIGKILL)
    result = job.finish(timeout=60)
    assert "rank 0 on host localhost was killed by signal 9" in \
        result.stderr, result.stderr
    rows, _ = rows_of(events_of(path))
    assert rows["grad.0"].count("ALLREDUCE") >= 5, rows


def test_autotune_tries_settings_logs_them_and_keeps_results_right(
        hvdrun, tmp_path):
    """A small budget, so that the tuner finishes within the loop; every
    step's results are still checked by the worker while the settings
    change under it."""
    log = tmp_path / "autotune.csv"
    env = {"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": str(log),
           "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1",
           "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2",
           "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "4"}
    stats = steady_stats(hvdrun, env)
    assert stats[0]["coordinator_rounds"] == stats[1]["coordinator_rounds"]
    lines = log.read_text().splitlines()
    assert lines[0] == ("trial,fusion_threshold_bytes,cycle_time_ms,"
                        "cache_enabled,hierarchical_allreduce,"
                        "throughput_bytes_per_s,best"), lines
    trials = [l.split(",") for l in lines[1:]]
    assert 2 <= len(trials) <= 5, lines
    assert [t[-1] for t in trials[:-1]] == ["0"] * (len(trials) - 1), lines
    assert trials[-1][-1] == "1", "the chosen settings close the log"
    # Two ranks on one host: the shared-memory allreduce starts on.
    assert trials[0][4] == "1", lines
    settings = {tuple(t[1:5]) for t in trials[:-1]}
    assert len(settings) == len(trials) - 1, "each trial tries new settings"
    assert tuple(trials[-1][1:5]) in settings


def elastic_sets_job(hvdrun, tmp_path, sets):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("localhost:2\n127.0.0.1:1\n")
    discover = tmp_path / "discover.sh"
    discover.write_text(f"#!/bin/sh\ncat {hosts}\n")
    discover.chmod(0o755)
    # A failed slot's host is blacklisted; a short elastic timeout ends the
    # job soon after, instead of waiting for hosts that never come.
    return hvdrun(["-np", "3", "--min-np", "2", "--elastic-timeout", "3",
                   "--host-discovery-script", str(discover), PYTHON,
                   str(WORKERS / "elastic_sets_worker.py"), str(hosts),
                   json.dumps(sets)], timeout=120)


def test_process_sets_are_recreated_after_an_elastic_reset(hvdrun, tmp_path):
    result = elastic_sets_job(hvdrun, tmp_path, [[0, 1], [1]])
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(2):
        assert rank_lines(result.stdout, rank) == [
            "done size 2 sets [(1, [0, 1]), (2, [1])]"], result.stdout


def test_a_process_set_the_new_world_lacks_is_a_clear_error(hvdrun,
                                                           tmp_path):
    result = elastic_sets_job(hvdrun, tmp_path, [[0, 1], [1, 2]])
    assert result.returncode != 0, result.stdout + result.stderr
    assert "process set names rank 2, but the job has ranks 0 to 1" in \
        result.stderr, result.stderr
    assert "The registered process sets are [[0, 1], [1, 2]]" in \
        result.stderr, result.stderr
