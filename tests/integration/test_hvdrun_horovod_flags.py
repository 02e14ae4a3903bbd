"""hvdrun's command line against horovodrun's (horovod/runner/launch.py):
every horovodrun option is accepted or refused with its reason, the YAML
--config-file, --thread-affinity pinning the background thread, negations,
last-wins, did-you-mean. Cheap: only two launches start workers."""

import json
import os
import textwrap

import pytest

# Every option of horovodrun's argparse parser (launch.py), as data: the
# spellings, and what to give after it. (Help's -h/--help is CLI11's too.)
ACCEPTED = [
    (["-v", "--version"], []),
    (["-np", "--num-proc"], ["2"]),
    (["-cb", "--check-build"], []),
    (["--disable-cache"], []),
    (["--start-timeout"], ["30"]),
    (["--network-interfaces"], ["lo"]),
    (["--network-interface"], ["lo"]),
    (["--output-filename"], ["/tmp/hvd-out"]),
    (["--verbose"], []),
    (["--config-file"], ["@config"]),
    (["-p", "--ssh-port"], ["22"]),
    (["-i", "--ssh-identity-file"], ["@file"]),
    (["--fusion-threshold-mb"], ["64"]),
    (["--cycle-time-ms"], ["5"]),
    (["--cache-capacity"], ["0"]),
    (["--no-hierarchical-allreduce"], []),
    (["--no-hierarchical-allgather"], []),
    (["--hierarchical-allreduce"], []),
    (["--hierarchical-allgather"], []),
    (["--autotune"], []),
    (["--no-autotune"], []),
    (["--autotune-log-file"], ["/tmp/a.csv"]),
    (["--autotune-warmup-samples"], ["3"]),
    (["--autotune-steps-per-sample"], ["10"]),
    (["--autotune-bayes-opt-max-samples"], ["20"]),
    (["--autotune-gaussian-process-noise"], ["0.8"]),
    (["--min-np", "--min-num-proc"], ["1"]),
    (["--max-np", "--max-num-proc"], ["4"]),
    (["--slots-per-host"], ["2"]),
    (["--elastic-timeout"], ["600"]),
    (["--reset-limit"], ["3"]),
    (["--blacklist-cooldown-range"], ["10", "100"]),
    (["--timeline-filename"], ["/tmp/t.json"]),
    (["--timeline-mark-cycles"], []),
    (["--no-timeline-mark-cycles"], []),
    (["--no-stall-check"], []),
    (["--stall-check"], []),
    (["--stall-check-warning-time-seconds"], ["60"]),
    (["--stall-check-shutdown-time-seconds"], ["0"]),
    (["--tcp"], []),
    (["--thread-affinity"], ["0"]),
    (["--gloo-timeout-seconds"], ["30"]),
    (["--log-level"], ["WARNING"]),
    (["--log-with-timestamp"], []),
    (["--log-without-timestamp"], []),
    (["--log-hide-timestamp"], []),
    (["--no-log-hide-timestamp"], []),
    (["-prefix-timestamp", "--prefix-output-with-timestamp"], []),
    (["-H", "--hosts"], ["localhost:2"]),
    (["-hostfile", "--hostfile"], ["@hostfile"]),
    (["--host-discovery-script"], ["@file"]),
    (["--gloo"], []),
]

# horovodrun options hvdrun refuses (N/A in hvd), with the reason the
# refusal must give.
REFUSED = [
    (["--mpi"], [], "no MPI controller"),
    (["--jsrun"], [], "no MPI controller"),
    (["--mpi-args"], ["--map-by x"], "no MPI controller"),
    (["--binding-args"], ["--rankfile f"], "no MPI controller"),
    (["--mpi-threads-disable"], [], "no MPI controller"),
    (["--no-mpi-threads-disable"], [], "no MPI controller"),
    (["--num-nccl-streams"], ["2"], "one stream of its own"),
]


def _value(word, tmp_path):
    if word == "@config":
        path = tmp_path / "c.yaml"
        path.write_text("params:\n  cycle_time_ms: 2\n")
        return str(path)
    if word == "@hostfile":
        path = tmp_path / "hosts"
        path.write_text("localhost slots=2\n")
        return str(path)
    if word == "@file":
        path = tmp_path / "script.sh"
        path.write_text("#!/bin/sh\necho localhost:2\n")
        path.chmod(0o755)
        return str(path)
    return word


def test_every_horovodrun_option_is_accepted_or_refused(hvdrun, tmp_path):
    for spellings, values, in ACCEPTED:
        for spelling in spellings:
            args = [spelling, *[_value(v, tmp_path) for v in values]]
            # --check-build ends the run after parsing: nothing starts.
            result = hvdrun([*args, "-cb"], timeout=30)
            assert result.returncode == 0, (args, result.stderr)
            assert result.stdout.strip(), args  # the version or build
    for spellings, values, reason in REFUSED:
        for spelling in spellings:
            result = hvdrun([spelling, *values, "-cb"], timeout=30)
            assert result.returncode == 2, (spelling, result.stdout)
            assert "not supported" in result.stderr, result.stderr
            assert reason in result.stderr, (spelling, result.stderr)


def test_unknown_options_and_bad_numbers_are_usage_errors(hvdrun, tmp_path):
    marker = tmp_path / "ran"
    command = ["sh", "-c", f"touch {marker}"]
    for args, expected in [
            (["--verbsoe"], "did you mean --verbose?"),
            (["--fusion-threshold"], None),  # a prefix: accepted, needs value
            (["--netwrok-interface", "lo"], "did you mean --network-interface?"),
            (["--no-autotnue"], "did you mean --no-autotune?"),
            (["--mpii"], "did you mean --mpi?"),
            (["-np", "two"], "-np/--num-proc: 'two' is not a whole number"),
            (["--cycle-time-ms", "two"], "'two' is not a number"),
            (["--thread-affinity", "1,x"],
             "--thread-affinity: '1,x' is not a list of CPU core numbers"),
            (["--network-interfaces", "lo,,eth0"],
             "not a comma-separated list of interface names"),
    ]:
        result = hvdrun(["-np", "1", *args, *command], timeout=30)
        assert result.returncode == 2, (args, result.stderr)
        if expected:
            assert expected in result.stderr, (args, result.stderr)
        assert len(result.stderr) < 400, result.stderr
    assert not marker.exists()


WORKER_ENV = ("echo fusion=$HOROVOD_FUSION_THRESHOLD "
              "cycle=$HOROVOD_CYCLE_TIME autotune=${HOROVOD_AUTOTUNE:-0} "
              "iface=$HOROVOD_GLOO_IFACE hide=$HOROVOD_LOG_HIDE_TIME "
              "cache=${HOROVOD_CACHE_CAPACITY:-unset}")


def test_config_file_and_the_command_line_that_overrides_it(hvdrun, tmp_path):
    config = tmp_path / "horovod.yaml"
    config.write_text(textwrap.dedent("""\
        params:
          fusion_threshold_mb: 8
          cycle_time_ms: 7
        autotune:
          enabled: true
        logging:
          with_timestamp: false
        controller: gloo
        """))
    # The command line wins whether it comes before or after --config-file;
    # a repeated option keeps its last value; --disable-cache leaves the
    # response cache alone.
    result = hvdrun(["--cycle-time-ms", "3", "--config-file", str(config),
                     "--no-autotune", "--network-interface", "nosuch0",
                     "--network-interface", "lo", "--disable-cache",
                     "-np", "1", "sh", "-c", WORKER_ENV], timeout=60)
    assert result.returncode == 0, result.stderr
    fields = dict(word.split("=", 1) for word in result.stdout.split(":", 1)[1]
                  .split())
    assert fields == {"fusion": str(8 << 20), "cycle": "3.000000",
                      "autotune": "0", "iface": "lo", "hide": "1",
                      "cache": "unset"}, result.stdout

    for text, expected in [
            ("params:\n  fusion_treshold_mb: 8\n",
             "params.fusion_treshold_mb: unknown key; did you mean "
             "fusion_threshold_mb?"),
            ("params:\n  cycle_time_ms: fast\n",
             "params.cycle_time_ms: 'fast' is not a number"),
            ("logging:\n  level: loud\n", "logging.level"),
            ("controller: mpi\n", "controller: refused"),
            ("library_options:\n  num_nccl_streams: 2\n",
             "one stream of its own"),
            ("library_options:\n  thread_affinity: -1\n",
             "library_options.thread_affinity: '-1' is not a list"),
    ]:
        config.write_text(text)
        result = hvdrun(["--config-file", str(config), "-np", "1", "true"],
                        timeout=30)
        assert result.returncode == 2, (text, result.stderr)
        assert str(config) in result.stderr, result.stderr
        assert expected in result.stderr, (text, result.stderr)


AFFINITY_WORKER = textwrap.dedent("""\
    import glob, json, os
    import hvd
    hvd.init()
    threads = {}
    for status in glob.glob("/proc/self/task/*/status"):
        fields = dict(line.split(":", 1) for line in open(status)
                      if ":" in line)
        threads[status.split("/")[4]] = fields["Cpus_allowed_list"].strip()
    print(json.dumps({"local_rank": hvd.local_rank(),
                      "main": threads[str(os.getpid())],
                      "threads": sorted(threads.values())}), flush=True)
    hvd.shutdown()
    """)


def _cpu_list(cores):
    return ",".join(str(c) for c in cores)


def test_thread_affinity_pins_each_local_ranks_background_thread(
        hvdrun, tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.fail("this test needs two CPU cores to tell ranks apart")
    cores = [allowed[-1], allowed[0]]  # rank 0 on the last, rank 1 the first
    script = tmp_path / "affinity.py"
    script.write_text(AFFINITY_WORKER)
    import sys
    result = hvdrun(["-np", "2", "--thread-affinity", _cpu_list(cores),
                     sys.executable, str(script)], timeout=120)
    assert result.returncode == 0, result.stderr
    seen = {}
    for line in result.stdout.splitlines():
        payload = json.loads(line.split(":", 1)[1])
        seen[payload["local_rank"]] = payload
    assert sorted(seen) == [0, 1], result.stdout
    for rank, payload in seen.items():
        core = str(cores[rank])
        # Exactly the background thread is pinned; the main thread is not.
        assert payload["threads"].count(core) == 1, payload
        assert payload["main"] != core, payload

    # Fewer cores than local ranks: hvd.init() fails naming the variable.
    result = hvdrun(["-np", "2", "--thread-affinity", str(allowed[0]),
                     sys.executable, str(script)], timeout=120)
    assert result.returncode != 0
    assert "HOROVOD_THREAD_AFFINITY" in result.stderr, result.stderr
