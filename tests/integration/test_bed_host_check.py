"""hvdrun's host check before any worker starts (design.md, "The host
check"), with real ssh to the test bed's hosts (scripts/cluster/): a host
whose sshd is gone fails a static job before any worker started and is
blacklisted by an elastic one, a host whose key ssh does not trust is
refused before anything is sent to it, and --network-interfaces lists
are checked on every host. Run from the root namespace, as root."""

import sys

from conftest import ROOT, rank_lines, untimed

# A worker that joins the job (hvd.init) from this tree's build, wherever
# the .pth of the machine's Python points.
WORKER = f"""\
import socket, sys
sys.path[:0] = [{str(ROOT / "python")!r}, {str(ROOT / "build" / "python")!r}]
import hvd
hvd.init()
print("joined", socket.gethostname(), hvd.rank(), hvd.size(), flush=True)
hvd.shutdown()
"""


def worker(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return [sys.executable, str(script)]


def test_static_job_fails_before_any_worker_naming_the_host_and_ssh(
        bed, hvdrun, tmp_path):
    h1, h2 = bed.up(2)
    bed.ctl("crash", h2)  # its sshd is gone: the port refuses
    marker = tmp_path / "started"
    command = ["sh", "-c", f"touch {marker}"]
    result = hvdrun(["-np", "2", "-H", f"{h1}:1,{h2}:1", "--start-timeout",
                     "5", *command], timeout=30)
    assert result.returncode == 1, result.stderr
    lines = untimed(result.stderr)
    assert (f"hvdrun: cannot reach host {h2} over ssh: ssh: connect to host "
            f"{h2} port 22: Connection refused") in lines, result.stderr
    assert lines[-1] == ("hvdrun: 1 of 2 hosts failed the check before "
                         "launch; no worker was started; job failed (exit "
                         "code 1)"), result.stderr
    assert not any(h1 in line for line in lines), result.stderr
    assert not marker.exists()

    # The second port refuses the bed's usual key: every host fails, each
    # named with ssh's own words.
    result = hvdrun(["-np", "1", "-H", f"{h1}:1", "-p", "2222",
                     "--start-timeout", "5", *command], timeout=30)
    assert result.returncode == 1, result.stderr
    assert (f"hvdrun: cannot reach host {h1} over ssh: root@{h1}: Permission "
            f"denied (publickey).") in untimed(result.stderr), \
        result.stderr
    assert not marker.exists()


def test_a_host_whose_key_ssh_does_not_trust_gets_nothing(bed, hvdrun,
                                                          tmp_path):
    """The bed's ssh configuration checks host keys strictly against its
    own known_hosts, and hvdrun leaves that to it. h2's sshd gets a new
    key (ctl.sh rekey): the check refuses h2 saying how to trust a host,
    no worker starts, and h2's sshd never let a client in, so no byte of
    a launch message (the job's secret) reached it;
    --ssh-accept-new-host-keys does not accept a changed key. h1, once
    ssh forgets it, is refused too, and with the flag ssh records it and
    the job runs."""
    h1, h2 = bed.up(2)
    bed.ctl("rekey", h2)
    marker = tmp_path / "started"
    command = ["sh", "-c", f"touch {marker}"]
    for extra in ([], ["--ssh-accept-new-host-keys"]):
        result = hvdrun(["-np", "2", "-H", f"{h1}:1,{h2}:1",
                         "--start-timeout", "5", *extra, *command],
                        timeout=30)
        assert result.returncode == 1, result.stderr
        lines = untimed(result.stderr)
        assert [l for l in lines if l.startswith(
            f"hvdrun: cannot reach host {h2} over ssh: its host key is not "
            "the one your known_hosts holds for it") and
            f"ssh-keyscan {h2} >> ~/.ssh/known_hosts" in l], result.stderr
        assert lines[-1] == ("hvdrun: 1 of 2 hosts failed the check before "
                             "launch; no worker was started; job failed "
                             "(exit code 1)"), result.stderr
        assert not marker.exists()
    sshd_log = (bed.dir / h2 / "sshd.log").read_text()
    assert "Accepted publickey" not in sshd_log, sshd_log

    known = bed.dir / "known_hosts"
    known.write_text("".join(
        line for line in known.read_text().splitlines(keepends=True)
        if not line.startswith((f"{h1},", f"[{h1}]"))))
    forgotten = len(known.read_text().splitlines())
    result = hvdrun(["-np", "1", "-H", f"{h1}:1", "--start-timeout", "5",
                     *command], timeout=30)
    assert result.returncode == 1, result.stderr
    assert (f"hvdrun: cannot reach host {h1} over ssh: ssh does not know "
            "its host key") in result.stderr, result.stderr
    assert not marker.exists()
    result = hvdrun(["-np", "1", "-H", f"{h1}:1", "--start-timeout", "5",
                     "--ssh-accept-new-host-keys", *command], timeout=30)
    assert result.returncode == 0, result.stderr
    assert marker.exists()
    # ssh recorded it (hashed, as Debian's ssh_config asks).
    assert len(known.read_text().splitlines()) > forgotten


def test_elastic_job_blacklists_a_host_that_refuses_ssh(bed, hvdrun,
                                                        tmp_path):
    h1, h2 = bed.up(2)
    bed.ctl("crash", h2)
    result = hvdrun(["--min-np", "1", "-np", "1", "-H", f"{h1}:1,{h2}:1",
                     "--start-timeout", "10", *worker(tmp_path)], timeout=60)
    assert result.returncode == 0, result.stderr
    assert (f"hvdrun: cannot reach host {h2} over ssh: ssh: connect to host "
            f"{h2} port 22: Connection refused; host {h2} blacklisted") in \
        untimed(result.stderr), result.stderr
    assert rank_lines(result.stdout, 0) == [f"joined {h1} 0 1"], result.stdout


def test_network_interfaces_list_is_checked_on_every_host(bed, hvdrun,
                                                          tmp_path):
    h1, h2 = bed.up(2)
    bridge = f"br-{bed.prefix}"  # this machine's side of the bed
    # Each machine uses the first of the list it has: this one the bridge,
    # the bed's hosts eth0.
    result = hvdrun(["-np", "2", "-H", f"{h1}:1,{h2}:1",
                     "--network-interfaces", f"nosuch0,{bridge},eth0",
                     *worker(tmp_path)], timeout=60)
    assert result.returncode == 0, result.stderr
    assert rank_lines(result.stdout, 0) == [f"joined {h1} 0 2"], result.stdout
    assert rank_lines(result.stdout, 1) == [f"joined {h2} 1 2"], result.stdout

    # A list no host has: one line per host, naming what it has; no worker.
    marker = tmp_path / "started"
    result = hvdrun(["-np", "2", "-H", f"{h1}:1,{h2}:1",
                     "--network-interfaces", bridge, "sh", "-c",
                     f"touch {marker}"], timeout=30)
    assert result.returncode == 1, result.stderr
    for host in (h1, h2):
        assert (f"hvdrun: host {host} has none of the network interfaces "
                f"{bridge} (--network-interfaces) with an IPv4 address; it "
                f"has: lo, eth0") in untimed(result.stderr), result.stderr
    assert not marker.exists()

    # And one this machine lacks is refused before anything is started.
    result = hvdrun(["-np", "2", "-H", f"{h1}:1,{h2}:1",
                     "--network-interfaces", "nosuch0", "true"], timeout=30)
    assert result.returncode == 1, result.stderr
    assert untimed(result.stderr)[0].startswith(
        "hvdrun: this machine has none of the network interfaces nosuch0 "
        "(--network-interfaces) with an IPv4 address; it has: lo, "), \
        result.stderr
    assert not marker.exists()
