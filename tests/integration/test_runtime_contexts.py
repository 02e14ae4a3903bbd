"""The runtime's Gloo contexts, connected through hvdrun's rendezvous."""

from conftest import ROOT, rank_lines

WORKER = ROOT / "build" / "tests" / "runtime" / "contexts_worker"


def test_global_local_and_cross_contexts_on_two_hosts(hvdrun):
    result = hvdrun(["-H", "127.0.0.1:2,127.0.0.2:2", str(WORKER)])
    assert result.returncode == 0, result.stderr
    # Ranks 0,1 on 127.0.0.1 and 2,3 on 127.0.0.2.
    expected = {0: "global=6 local=1 cross=2 sizes=4/2/2",
                1: "global=6 local=1 cross=4 sizes=4/2/2",
                2: "global=6 local=5 cross=2 sizes=4/2/2",
                3: "global=6 local=5 cross=4 sizes=4/2/2"}
    for rank, line in expected.items():
        assert rank_lines(result.stdout, rank) == [line], result.stderr


def test_uneven_hosts(hvdrun):
    result = hvdrun(["-np", "3", "-H", "127.0.0.1:2,127.0.0.3:2", str(WORKER)])
    assert result.returncode == 0, result.stderr
    assert rank_lines(result.stdout, 2) == ["global=3 local=2 cross=2 sizes=3/1/2"]
    assert rank_lines(result.stdout, 1) == ["global=3 local=1 cross=1 sizes=3/2/1"]


def test_worker_outside_hvdrun_gets_a_clear_error(tmp_path):
    import os
    import subprocess
    env = dict(os.environ, HOROVOD_RANK="0")
    env.pop("HOROVOD_SIZE", None)
    result = subprocess.run([str(WORKER)], env=env, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 1
    assert "HOROVOD_SIZE is not set" in result.stderr
