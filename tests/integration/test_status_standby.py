"""The status server of a standby hvdrun (--standby) on one real etcd
member on this machine: it starts as the standby does, `hvdrun status`
lists it, its /status.json redirects to the leader's page when the leader
publishes one other machines can read, and says why not when the leader's
page is loopback-only."""

import http.client
import json
import os
import signal
import subprocess
import urllib.parse

import pytest

from conftest import HVDRUN, wait_until
from test_status import URL_LINE, get, status_url


@pytest.fixture(autouse=True)
def own_job_files(tmp_path, monkeypatch):
    """`hvdrun status` lists the jobs of this test only (as in
    test_status.py)."""
    runtime_dir = tmp_path / "xdg-runtime"
    runtime_dir.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))


def job_args(etcd, tmp_path, job):
    """The flags the leader and its standby share: the job, its etcd, and
    the secret file that lets the standby take it over."""
    secret = tmp_path / "job.secret"
    if not secret.exists():
        secret.write_text("s" * 64)
        secret.chmod(0o600)
    return ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            etcd.endpoint, "--job-id", job, "--job-secret-file", str(secret)]


# A static job whose one worker waits: nothing here needs it to train.
COMMAND = ["-np", "1", "sleep", "600"]


def start_pair(hvdrun, etcd, tmp_path, job, leader_bind):
    """(leader, its status URL, standby, its status URL), once the standby
    has said who leads."""
    shared = job_args(etcd, tmp_path, job)
    leader = hvdrun.start([*shared, "--status-bind", leader_bind, *COMMAND])
    leader_url = status_url(leader)
    standby = hvdrun.start(["--standby", *shared, *COMMAND])
    standby_url = status_url(standby)
    standby.wait_for_line(
        lambda l: f"standby for job '{job}'" in l and
        f"led by hvdrun pid {leader.pid} on " in l,
        "the standby naming its leader", stream="stderr")
    return leader, leader_url, standby, standby_url


def raw_get(url, path):
    """(HTTP status, Location header, body) of `path` at `url`'s server,
    with `url`'s query, no redirect followed."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port,
                                            timeout=10)
    try:
        connection.request("GET", f"{path}?{parts.query}")
        answer = connection.getresponse()
        return (answer.status, answer.getheader("Location"),
                answer.read().decode())
    finally:
        connection.close()


def hvdrun_status(*args):
    result = subprocess.run([str(HVDRUN), "status", *args],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ))
    return result


def stop(child):
    """SIGTERM, then its exit within the fixture's bound."""
    child.send_signal(signal.SIGTERM)
    child.finish(60)


def test_a_standby_redirects_to_its_leader_and_hvdrun_status_lists_it(
        hvdrun, etcd, tmp_path):
    leader, leader_url, standby, standby_url = start_pair(
        hvdrun, etcd, tmp_path, "follow", "0.0.0.0")
    # Both derive the read token from the job's secret: the redirect's
    # ?token= opens the leader's page.
    leader_query = urllib.parse.urlsplit(leader_url).query
    assert urllib.parse.urlsplit(standby_url).query == leader_query, \
        (leader_url, standby_url)
    leader_base = leader_url.split("/?")[0]
    # The leader publishes its page right after it starts it.
    answer = wait_until(
        lambda: (lambda a: a if a[0] == 307 else None)(
            raw_get(standby_url, "/status.json")),
        "the standby's /status.json redirecting", timeout=20)
    code, location, body = answer
    assert location == f"{leader_base}/status.json?{leader_query}", answer
    said = json.loads(body)["standby"]
    assert said["pid"] == standby.pid, said
    assert said["leader"].startswith(f"hvdrun pid {leader.pid} on "), said
    assert said["leader_page"]["url"] == leader_base, said
    assert said["no_redirect"] is None, said
    assert raw_get(standby_url, "/")[:2] == (
        307, f"{leader_base}/?{leader_query}")
    # Following it reaches the leader's own status.
    code, body = get(location, "/status.json")
    assert code == 200, body
    assert json.loads(body)["leader"]["this_hvdrun"].startswith(
        f"hvdrun pid {leader.pid} on ")
    # /metrics stays the standby's own.
    code, body = get(standby_url, "/metrics")
    assert code == 200 and "\nhvd_standby 1\n" in body, body

    listed = hvdrun_status()
    assert listed.returncode == 0, listed.stdout + listed.stderr
    out = listed.stdout
    assert f"hvdrun pid {leader.pid}: {leader_url}" in out, out
    assert f"hvdrun pid {standby.pid}: {standby_url}" in out, out
    standby_part = out[out.index(f"hvdrun pid {standby.pid}: "):]
    assert standby_part.splitlines()[1].startswith(
        f"answered by: standby hvdrun pid {standby.pid} on "), out
    assert (f"the job is led by hvdrun pid {leader.pid} on "
            in standby_part), out
    assert f"; its status page: {leader_base}\n" in standby_part, out
    assert "\njob: " in standby_part, out

    listed = hvdrun_status("--json")
    assert listed.returncode == 0, listed.stderr
    jobs = {job["pid"]: job for job in json.loads(listed.stdout)}
    assert set(jobs) == {leader.pid, standby.pid}, jobs
    followed = jobs[standby.pid]["status"]
    assert followed["standby"]["pid"] == standby.pid, followed
    assert followed["leader"]["leading"] is True, followed
    assert "standby" not in jobs[leader.pid]["status"], jobs

    one = hvdrun_status("--json", standby_url)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["standby"]["leader_page"]["url"] == \
        leader_base

    # A standby that stops leaves the listing.
    stop(standby)
    listed = hvdrun_status("--json")
    assert [job["pid"] for job in json.loads(listed.stdout)] == \
        [leader.pid], listed.stdout
    stop(leader)


def test_a_loopback_only_leader_is_named_with_why_it_cannot_be_followed(
        hvdrun, etcd, tmp_path):
    leader, leader_url, standby, standby_url = start_pair(
        hvdrun, etcd, tmp_path, "alone", "127.0.0.1")
    leader_base = leader_url.split("/?")[0]

    def said():
        code, location, body = raw_get(standby_url, "/status.json")
        assert code == 200 and location is None, (code, location, body)
        standby = json.loads(body)["standby"]
        return standby if standby["leader_page"] else None

    standby_said = wait_until(said, "the standby knowing the leader's page",
                              timeout=20)
    assert standby_said["leader_page"]["kind"] == "loopback", standby_said
    why = standby_said["no_redirect"]
    assert why.startswith(
        "the leader's status page listens on loopback only: "
        f"{leader_base} answers on "), why
    assert "--status-bind 0.0.0.0" in why, why
    code, page = get(standby_url, "/")
    assert code == 200 and "loopback only" in page, page

    shown = hvdrun_status(standby_url)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(
        f"answered by: standby hvdrun pid {standby.pid} on "), shown.stdout
    assert lines[1].startswith(
        f"the job is led by hvdrun pid {leader.pid} on "), shown.stdout
    assert lines[2] == f"not followed: {why}", shown.stdout
    stop(standby)
    stop(leader)


def test_a_standby_without_a_status_server_is_not_listed(
        hvdrun, etcd, tmp_path):
    shared = job_args(etcd, tmp_path, "quiet")
    leader = hvdrun.start([*shared, *COMMAND])
    status_url(leader)
    standby = hvdrun.start(["--standby", *shared, "--status-bind", "none",
                            *COMMAND])
    standby.wait_for_line(lambda l: "standby for job 'quiet'" in l,
                          "the standby naming its leader", stream="stderr")
    assert not any(URL_LINE.match(l)
                   for l in standby.text("stderr").splitlines())
    listed = hvdrun_status("--json")
    assert [job["pid"] for job in json.loads(listed.stdout)] == \
        [leader.pid], listed.stdout
    stop(standby)
    stop(leader)
