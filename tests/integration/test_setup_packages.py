"""scripts/setup.sh asks apt for what building and running hvd needs, and
nothing that only the tests need (scripts/lib/packages.sh lists both by
purpose): run with a dpkg-query that finds nothing installed and an apt-get
that records what it is asked, setup.sh asks for exactly its lists, while a
policy-rc.d denies every service start; and apt's own plan for those lists
on a bare machine (apt-get -s over an empty dpkg status) holds no package
of the test lists, so no Slurm, MariaDB, MUNGE or sshd comes with them."""

import os
import pathlib
import subprocess

import pytest

from conftest import ROOT


def package_lists():
    script = ("source scripts/lib/common.sh; source scripts/lib/packages.sh; "
              "for n in build run wheel unit_test pytest bed slurm etcd "
              "browser sanitizer; do eval \"echo $n \\${hvd_${n}_packages[*]}\"; done")
    out = subprocess.run(["bash", "-c", script], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()}


def test_setup_asks_for_its_lists_and_starts_no_service(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    asked = tmp_path / "asked"
    (fake / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    # Records each install with the policy in force, then fails, so that
    # setup.sh stops before it builds.
    (fake / "apt-get").write_text(f"""#!/bin/sh
[ "$1" = install ] || exit 0
policy=none
if [ -x /usr/sbin/policy-rc.d ]; then
  /usr/sbin/policy-rc.d mariadb start; policy=$?
fi
echo "policy $policy" >>{asked}
echo "$@" >>{asked}
exit 1
""")
    for f in fake.iterdir():
        f.chmod(0o755)
    policy = pathlib.Path("/usr/sbin/policy-rc.d")
    own = policy.read_bytes() if policy.exists() else None
    own_code = (subprocess.run([str(policy), "mariadb", "start"]).returncode
                if own is not None else None)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    result = subprocess.run([str(ROOT / "scripts" / "setup.sh")], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "apt-get could not install" in result.stderr, result.stderr
    lines = asked.read_text().splitlines()
    assert len(lines) == 2, lines
    if own is None:
        # Ours: every start denied (invoke-rc.d's "forbidden" code), and
        # gone again afterwards.
        assert lines[0] == "policy 101", lines
        assert not policy.exists()
    else:
        # The machine's own (a Docker image's denies every start too) is
        # left as it was.
        assert lines[0] == f"policy {own_code}", lines
        assert policy.read_bytes() == own
    words = lines[1].split()
    requested = {w for w in words if not w.startswith("-") and w != "install"}
    lists = package_lists()
    expected = set(lists["build"] + lists["run"])
    # A build/ configured with the tests keeps them, and their package.
    cache = ROOT / "build" / "CMakeCache.txt"
    if cache.exists() and "HVD_BUILD_TESTS:BOOL=ON" in cache.read_text():
        expected |= set(lists["unit_test"])
    assert requested == expected, (sorted(requested - expected),
                                   sorted(expected - requested))


def test_apts_plan_for_setups_lists_holds_no_test_package(tmp_path):
    lists_dir = pathlib.Path("/var/lib/apt/lists")
    if not any("_Packages" in p.name for p in lists_dir.iterdir()):
        pytest.skip("apt has no package lists here (run apt-get update) to "
                    "simulate a bare machine's install from")
    lists = package_lists()
    setup = set(lists["build"] + lists["run"])
    test_only = {p for name in ("wheel", "unit_test", "pytest", "bed",
                                "slurm", "etcd", "browser", "sanitizer")
                 for p in lists[name]} - setup
    status = tmp_path / "status"
    status.write_text("")
    plan = subprocess.run(
        ["apt-get", "-s", "-o", f"Dir::State::status={status}",
         "--no-install-recommends", "install", *sorted(setup)],
        capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    installed = {line.split()[1] for line in plan.stdout.splitlines()
                 if line.startswith("Inst ")}
    # The simulation is of a bare machine: it installs the lists themselves.
    assert setup <= installed, sorted(setup - installed)
    assert not installed & test_only, sorted(installed & test_only)


def enabled_at_boot():
    return subprocess.run(
        ["bash", "-c", "source scripts/lib/common.sh; "
         "hvd_services_enabled_at_boot"], cwd=ROOT, check=True,
        capture_output=True, text=True).stdout.splitlines()


FAKE_UNIT = """[Unit]
Description=a service a package of the test enables
[Service]
ExecStart=/bin/true
[Install]
WantedBy=multi-user.target
"""
FAKE_INIT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          hvd-fake-init
# Required-Start:    $remote_fs
# Required-Stop:     $remote_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: a service a package of the test enables
### END INIT INFO
exit 0
"""


def test_a_service_the_install_enables_is_disabled_again(tmp_path):
    """An apt-get whose 'package' enables a service at boot the way
    maintainer scripts do (a systemd unit's wants link, sysv-rc start
    links): setup.sh leaves it disabled, and every service enabled before
    as it was."""
    # Two names: update-rc.d also disables a systemd unit of its name.
    unit = pathlib.Path("/etc/systemd/system/hvd-fake-unit.service")
    init = pathlib.Path("/etc/init.d/hvd-fake-init")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (fake / "apt-get").write_text(f"""#!/bin/sh
[ "$1" = install ] || exit 0
cp {tmp_path}/unit {unit} && systemctl --root=/ enable {unit.name} || exit 2
cp {tmp_path}/init {init} && chmod 755 {init} &&
  update-rc.d {init.name} defaults || exit 2
exit 1
""")
    (tmp_path / "unit").write_text(FAKE_UNIT)
    (tmp_path / "init").write_text(FAKE_INIT)
    for f in fake.iterdir():
        f.chmod(0o755)
    before = enabled_at_boot()
    assert not [s for s in before if "hvd-fake" in s], before
    try:
        env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
        result = subprocess.run([str(ROOT / "scripts" / "setup.sh")],
                                env=env, capture_output=True, text=True,
                                timeout=60)
        assert "apt-get could not install" in result.stderr, result.stderr
        # The fake did enable it: its links exist, as stop links now.
        assert list(pathlib.Path("/etc/rc2.d").glob("K*hvd-fake-init"))
        assert enabled_at_boot() == before
    finally:
        subprocess.run(["systemctl", "--root=/", "disable", unit.name],
                       capture_output=True)
        unit.unlink(missing_ok=True)
        subprocess.run(["update-rc.d", "-f", init.name, "remove"],
                       capture_output=True)
        init.unlink(missing_ok=True)
