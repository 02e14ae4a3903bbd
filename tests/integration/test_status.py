"""hvdrun's status server through the real hvdrun: the URL it prints, the
read token, status.json during an elastic job with a killed worker, /metrics
parsed by prometheus_client, and `hvdrun status` in a terminal."""

import json
import os
import re
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import pytest

from conftest import HVDRUN, wait_until
from test_elastic import Scenario


@pytest.fixture(autouse=True)
def own_job_files(tmp_path, monkeypatch):
    """`hvdrun status` without a URL lists every job of this user on this
    machine: the jobs of tests running beside these (pytest-xdist) too, one
    of them perhaps too busy to answer in time. Each test's hvdruns and
    `hvdrun status` share a job-file directory of their own
    ($XDG_RUNTIME_DIR/hvd)."""
    runtime_dir = tmp_path / "xdg-runtime"
    runtime_dir.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))

# hvdrun's own lines start with the time, "[2026-11-26 09:40:38.769] ".
URL_LINE = re.compile(r"^(?:\[[\d :.-]+\] )?hvdrun: status page: "
                      r"(http://\S+)$")


def status_url(child):
    line = child.wait_for_line(lambda l: URL_LINE.match(l),
                               "the status page line", stream="stderr")
    return URL_LINE.match(line).group(1)


def get(url, path, token=True, method="GET", timeout=10):
    """(HTTP status, body) of `path` at the server of `url`."""
    parts = urllib.parse.urlsplit(url)
    query = parts.query if token else ""
    target = urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, path, query, ""))
    request = urllib.request.Request(target, method=method,
                                     data=b"x" if method != "GET" else None)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def status(url):
    code, body = get(url, "/status.json")
    assert code == 200, body
    return json.loads(body)


def metrics(url):
    code, body = get(url, "/metrics")
    assert code == 200, body
    samples = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            samples[key] = sample.value
    return samples


def test_status_of_an_elastic_job_with_a_killed_worker(hvdrun, tmp_path):
    s = Scenario(tmp_path, "", epochs=40, batches=10, sleep=0.05,
                 exits=[{"slot": "127.0.0.1:1", "epoch": 1, "batch": 1,
                         "how": "kill"}])
    child = hvdrun.start(["-np", "4", "--min-np", "2", "-H",
                          "localhost:2,127.0.0.1:2", *s.command()])
    url = status_url(child)
    assert urllib.parse.urlsplit(url).hostname == "127.0.0.1"

    def recovered():
        # Generation 2 formed, and its workers reported their recovery and
        # their progress in it.
        now = status(url)
        gens = now["generations"]
        reported = all(r["report"] and r["report"]["generation"] == 2 and
                       r["report"]["commits"] > 0 for r in now["ranks"])
        return now if (len(gens) >= 2 and gens[-1]["complete_ms"]
                       and now["failures"] and reported and
                       now["recoveries"][-1]["reported_ranks"] == 2) else None
    now = wait_until(recovered, "generation 2 complete and reported after "
                     "the kill", timeout=60)
    job = now["job"]
    assert job["elastic"] and job["state"] == "running", job
    assert job["generation"] == 2 and job["world_size"] == 2, job
    assert job["resets_by_cause"] == {"failure": 1}, job
    hosts = {h["host"]: h for h in now["hosts"]}
    assert hosts["127.0.0.1"]["state"] == "blacklisted", hosts
    assert hosts["127.0.0.1"]["usable_again_ms"] is None  # no cooldown
    assert hosts["localhost"]["state"] == "running", hosts
    assert [r["slot"] for r in now["ranks"]] == ["localhost:0", "localhost:1"]
    assert all(isinstance(r["pid"], int) and r["checked_in"]
               for r in now["ranks"]), now["ranks"]
    failure = now["failures"][0]
    assert failure["slot"] == "127.0.0.1:1", failure
    assert failure["signal"] == "SIGKILL" and failure["exit_code"] == 137
    recovery = now["recoveries"][-1]
    assert recovery["cause"] == "failure", recovery
    # Every phase measured: detect from the victim's last report (about one
    # report interval at most), the rest by hvdrun or the survivors.
    for phase in ("detect_ms", "decide_ms", "rendezvous_ms", "connect_ms",
                  "sync_ms", "first_step_ms"):
        assert 0 <= recovery["phases"][phase] < 30000, recovery
    assert recovery["phases"]["detect_ms"] < 5000, recovery
    for rank in now["ranks"]:
        report = rank["report"]
        assert report["rank"] == rank["rank"], rank
        assert report["ops"]["allreduce"]["count"] > 0, rank
        assert report["ops"]["allreduce"]["bytes"] > 0, rank
        assert now["job"]["now_ms"] - report["received_ms"] < 10000, rank

    m = metrics(url)
    assert m[("hvd_generation", ())] == 2
    assert m[("hvd_world_size", ())] == 2
    assert m[("hvd_resets_total", (("cause", "failure"),))] == 1
    assert m[("hvd_resets_total", (("cause", "hosts"),))] == 0
    assert m[("hvd_worker_failures_total", ())] == 1
    assert m[("hvd_hosts", (("state", "blacklisted"),))] == 1
    assert m[("hvd_hosts", (("state", "running"),))] == 1
    assert m[("hvd_recovery_phase_seconds_count",
              (("phase", "rendezvous"),))] == 2
    assert m[("hvd_recovery_phase_seconds_count",
              (("phase", "first_step"),))] >= 1
    for rank in now["ranks"]:
        labels = (("op", "allreduce"), ("rank", str(rank["rank"])),
                  ("slot", rank["slot"]))
        assert m[("hvd_worker_ops_total", labels)] > 0, labels
        assert m[("hvd_worker_bytes_total", labels)] > 0, labels
    assert m[("hvd_rendezvous_requests_total", (("code", "2xx"),))] > 0
    # Every handled request was timed (the core's refusals are not).
    timed = m[("hvd_rendezvous_request_seconds_count", ())]
    answered = [m[("hvd_rendezvous_requests_total", (("code", code),))]
                for code in ("2xx", "4xx", "5xx")]
    assert answered[0] <= timed <= sum(answered), (timed, answered)

    # `hvdrun status` finds the job on this machine, and takes the URL.
    for args in ([], [url]):
        shown = subprocess.run([str(HVDRUN), "status", *args],
                               capture_output=True, text=True, timeout=30)
        assert shown.returncode == 0, shown.stderr
        assert "job: running, generation 2, 2 ranks, 1 reset, " in \
            shown.stdout, shown.stdout
        assert re.search(r"127\.0\.0\.1\s+2\s+blacklisted", shown.stdout), \
            shown.stdout
        assert "slot 127.0.0.1:1 (rank 3" in shown.stdout, shown.stdout
        assert "SIGKILL" in shown.stdout

    child.send_signal(2)
    child.wait(timeout=60)


def test_the_status_server_only_reads_and_only_with_the_token(hvdrun,
                                                              tmp_path):
    go = tmp_path / "go"
    child = hvdrun.start(["-np", "1", "/usr/bin/python3", "-c",
                          waiting_script(go)])
    url = status_url(child)
    code, page = get(url, "/")
    assert code == 200 and "<title>hvd job</title>" in page
    assert status(url)["job"]["state"] in ("starting", "running")
    for path in ("/", "/status.json", "/metrics"):
        code, body = get(url, path, token=False)
        assert code == 401, (path, code, body)
    for method in ("POST", "PUT", "DELETE"):
        code, body = get(url, "/status.json", method=method)
        assert code == 405, (method, code, body)
        assert "read-only" in body
    assert get(url, "/v1/kv/x")[0] == 404
    go.touch()
    assert child.wait(timeout=60) == 0
    # Its job file went with it.
    shown = subprocess.run([str(HVDRUN), "status"], capture_output=True,
                           text=True, timeout=30)
    assert url not in shown.stdout


def test_status_bind_takes_an_address_and_port(hvdrun, tmp_path):
    child = hvdrun.start(["--status-bind", "127.0.0.1:0", "-np", "1",
                          "/usr/bin/python3", "-c", "print('hi')"])
    assert urllib.parse.urlsplit(status_url(child)).hostname == "127.0.0.1"
    assert child.wait(timeout=60) == 0
    bad = subprocess.run([str(HVDRUN), "--status-bind", "127.0.0.1:99999",
                          "-np", "1", "true"], capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode != 0
    assert "--status-bind port" in bad.stderr, bad.stderr


def waiting_script(go):
    """A worker that waits (60 s at most) until `go` exists."""
    return ("import os, time\n"
            "deadline = time.monotonic() + 60\n"
            f"while not os.path.exists({str(go)!r}):\n"
            "    assert time.monotonic() < deadline\n"
            "    time.sleep(0.05)\n")


def test_status_token_file_keeps_the_url_and_none_turns_it_off(hvdrun,
                                                               tmp_path):
    token_file = tmp_path / "status.token"
    urls = []
    for _ in range(2):  # made by the first run, read by the second
        child = hvdrun.start(["--status-token-file", str(token_file),
                              "-np", "1", "/bin/true"])
        urls.append(status_url(child))
        assert child.wait(timeout=60) == 0
    token = token_file.read_text()
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"
    for url in urls:
        assert urllib.parse.parse_qs(urllib.parse.urlsplit(url).query) == \
            {"token": [token]}
    # A token the URL cannot carry as it is: refused at start, naming the
    # file.
    token_file.write_text("too short\n")
    bad = subprocess.run([str(HVDRUN), "--status-token-file", str(token_file),
                          "-np", "1", "/bin/true"], capture_output=True,
                         text=True, timeout=30)
    assert bad.returncode != 0
    assert f"--status-token-file {token_file}: the token must be" in \
        bad.stderr, bad.stderr
    # No status server: no URL, and the job runs.
    off = subprocess.run([str(HVDRUN), "--status-bind", "none", "-np", "1",
                          "/bin/true"], capture_output=True, text=True,
                         timeout=60)
    assert off.returncode == 0, off.stderr
    assert "status page" not in off.stderr, off.stderr


def test_hvdrun_status_takes_the_token_off_the_command_line(hvdrun,
                                                           tmp_path):
    """The read token comes from --token-file or HVD_STATUS_TOKEN, so
    that `ps` does not show it; a URL with ?token= still works, with a
    warning."""
    go = tmp_path / "go"
    token_file = tmp_path / "status.token"
    child = hvdrun.start(["--status-token-file", str(token_file), "-np",
                          "1", "/usr/bin/python3", "-c", waiting_script(go)])
    url = status_url(child)
    token = token_file.read_text().strip()
    bare = url.split("?")[0]

    def shown(*args, env_token=None):
        env = {k: v for k, v in os.environ.items()
               if k != "HVD_STATUS_TOKEN"}
        if env_token is not None:
            env["HVD_STATUS_TOKEN"] = env_token
        return subprocess.run([str(HVDRUN), "status", "--json", *args],
                              capture_output=True, text=True, timeout=30,
                              env=env)

    for args, env_token in (((bare,), token),
                            (("--token-file", str(token_file), bare), None),
                            ((f"--token-file={token_file}", bare), "wrong")):
        ok = shown(*args, env_token=env_token)
        assert ok.returncode == 0, (args, ok.stderr)
        assert json.loads(ok.stdout)["job"]["state"] in ("starting",
                                                         "running")
        assert "warning" not in ok.stderr, ok.stderr
    refused = shown(bare)
    assert refused.returncode == 1 and "answered 401" in refused.stderr, \
        refused.stderr
    in_url = shown(url)
    assert in_url.returncode == 0, in_url.stderr
    assert "hvdrun status: warning: the URL's ?token= is on hvdrun's " \
        "command line, where every user of this machine can read it" in \
        in_url.stderr, in_url.stderr
    missing = shown("--token-file", str(tmp_path / "none"), bare)
    assert missing.returncode == 2
    assert f"--token-file {tmp_path / 'none'}: cannot read it" in \
        missing.stderr, missing.stderr
    go.touch()
    assert child.wait(timeout=60) == 0


def test_rendezvous_port_is_the_one_given(hvdrun, tmp_path):
    with socket.socket() as probe:  # a port free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = hvdrun(["--verbose", "--rendezvous-port", str(port), "-np", "2",
                     "/usr/bin/python3", "-c",
                     "import hvd; hvd.init(); hvd.barrier()"])
    assert result.returncode == 0, result.stderr
    assert re.search(rf"rendezvous server on \S+:{port}\b", result.stderr), \
        result.stderr


def test_status_json_of_two_jobs_is_one_document(hvdrun, tmp_path):
    go = tmp_path / "go"
    children = [hvdrun.start(["-np", "1", "/usr/bin/python3", "-c",
                              waiting_script(go)]) for _ in range(2)]
    urls = {status_url(child) for child in children}
    listed = {}

    def both_listed():
        # hvdrun writes its job file just after it prints the URL.
        shown = subprocess.run([str(HVDRUN), "status", "--json"],
                               capture_output=True, text=True, timeout=30)
        if shown.returncode != 0:
            return False
        jobs = json.loads(shown.stdout)  # one document, whole
        listed.update({job["url"]: job for job in jobs})
        return urls <= set(listed)

    wait_until(both_listed, "both jobs in `hvdrun status --json`",
               timeout=30)
    go.touch()
    for url in urls:
        assert listed[url]["pid"] in {c.proc.pid for c in children}
        assert listed[url]["status"]["job"]["state"] in ("starting",
                                                         "running")
    for child in children:
        assert child.wait(timeout=60) == 0
