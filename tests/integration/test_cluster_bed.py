"""The test bed itself (scripts/cluster/): hosts that reach each other over
ssh by name, and what ctl.sh does to them."""

import subprocess


def ssh(*args, timeout=30):
    return subprocess.run(["ssh", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_hosts_reach_each_other_by_name_over_ssh(bed):
    hosts = bed.up(2)
    assert hosts == [f"{bed.prefix}1", f"{bed.prefix}2"]
    # From here (the root namespace) and from host to host, non-interactive.
    result = ssh(hosts[0], "hostname; ssh", hosts[1], "hostname")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == hosts
    # Each host's own name resolves to 127.0.1.1 there, as Debian writes
    # /etc/hosts, and to its bed address everywhere else.
    result = ssh(hosts[0], f"getent ahostsv4 {hosts[0]} | head -n 1; "
                           f"getent ahostsv4 {hosts[1]} | head -n 1")
    assert [line.split()[0] for line in result.stdout.splitlines()] == [
        "127.0.1.1", bed.address(hosts[1])]
    # The second port takes only the second key (hvdrun's -p and -i).
    alt_key = str(bed.dir / "alt_id_ed25519")
    assert ssh("-p", "2222", "-i", alt_key, hosts[1], "true").returncode == 0
    assert ssh("-p", "2222", hosts[1], "true").returncode == 255


def test_ctl_adds_partitions_heals_and_crashes_hosts(bed):
    hosts = bed.up(1)
    added = bed.ctl("add")
    assert added == [f"{bed.prefix}2"]
    assert ssh(hosts[0], "ssh", added[0], "true").returncode == 0
    # A process started there is in the host's namespace.
    sleeper = ssh(added[0], "sleep 300 >/dev/null 2>&1 & echo $!")
    assert sleeper.returncode == 0
    assert bed.job_pids(added[0]), "the sleeper is not among the host's pids"
    bed.ctl("partition", added[0])
    silent = ssh("-o", "ConnectTimeout=1", added[0], "true")
    assert silent.returncode == 255, "a partitioned host still answered"
    bed.ctl("heal", added[0])
    assert ssh(added[0], "true").returncode == 0
    bed.ctl("crash", added[0])
    assert bed.ctl("pids", added[0]) == []
