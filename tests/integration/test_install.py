"""hvd installed the ways docs/install.md describes, then run with the
checkout out of reach: the wheel that `pip wheel --no-build-isolation`
builds, installed into a fresh venv, and a `cmake --install` prefix used
over ssh on the test bed. Each runs a 2-worker job and an elastic job that
loses a worker to SIGKILL. hvdrun and every worker run with an empty file
system mounted over the checkout (a mount namespace of their own), and
report where hvd, its extension and their guard came from.

The wheel packs the suite's build folder (HVD_CMAKE_BUILD_DIR), which
scripts/setup.sh has built: the suite does not compile hvd a second time.
"""

import json
import os
import re
import signal
import subprocess
import zipfile

import pytest

from conftest import BUILD, ROOT, start_hvdrun

PYTHON = "/usr/bin/python3"

# Runs a command with ROOT covered by an empty tmpfs, in a mount namespace
# of its own (private: nothing leaks to the rest of the machine).
HIDE = """#!/bin/sh
root="$1"; shift
exec unshare --mount --propagation private -- \\
  sh -c 'mount -t tmpfs hvd-checkout-hidden "$0" && exec "$@"' "$root" "$@"
"""

PROBE = """
import json, os, socket, sys
import hvd, _hvd_core
hvd.init()
import numpy
total = hvd.allreduce(numpy.array([hvd.rank() + 1.0]), op=hvd.Sum)
print("probe " + json.dumps({
    "rank": hvd.rank(), "size": hvd.size(), "host": socket.gethostname(),
    "hvd": hvd.__file__, "core": _hvd_core.__file__,
    "version": hvd.__version__, "sum": float(total[0]),
    "guard": os.readlink(f"/proc/{os.getppid()}/exe"),
    "checkout_visible": os.path.exists(sys.argv[1])}), flush=True)
hvd.shutdown()
"""


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"^project\(hvd VERSION (\S+) ", text, re.M).group(1)


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    """The hide script and the probe worker, outside the checkout."""
    d = tmp_path_factory.mktemp("tools")
    (d / "hide").write_text(HIDE)
    (d / "hide").chmod(0o755)
    (d / "probe.py").write_text(PROBE)
    return d


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--no-index", "-w", str(out), str(ROOT)],
        cwd=ROOT, env=dict(os.environ, HVD_CMAKE_BUILD_DIR=str(BUILD)),
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout[-4000:] +
                                    result.stderr[-4000:])
    wheels = list(out.glob("hvd-*.whl"))
    assert [w.name for w in wheels] == [
        f"hvd-{project_version()}-cp311-cp311-linux_x86_64.whl"], wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    d = tmp_path_factory.mktemp("venv")
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(d)],
                   check=True, timeout=120)
    result = subprocess.run([str(d / "bin" / "pip"), "install", "--no-deps",
                             "--no-index", str(wheel)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return d


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    d = tmp_path_factory.mktemp("prefix")
    result = subprocess.run(["cmake", "--install", str(BUILD), "--prefix",
                             str(d)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return d


def hidden(tools, program):
    """The command that runs `program` with the checkout hidden."""
    return [str(tools / "hide"), str(ROOT), str(program)]


def prefix_env(prefix):
    return dict(os.environ, PATH=f"{prefix}/bin:{os.environ['PATH']}",
                PYTHONPATH=str(prefix / "lib" / "python3" / "dist-packages"))


def venv_env(venv):
    return dict(os.environ, PATH=f"{venv}/bin:{os.environ['PATH']}",
                VIRTUAL_ENV=str(venv))


def probes(stdout):
    return sorted((json.loads(line.split("probe ", 1)[1])
                   for line in stdout.splitlines() if "probe {" in line),
                  key=lambda p: p["rank"])


def check_probes(found, home, hosts):
    """Two ranks that summed, each running hvd, its extension and its
    guard from `home`, on `hosts`, with the checkout hidden."""
    assert [p["rank"] for p in found] == [0, 1], found
    for p in found:
        assert p["size"] == 2 and p["sum"] == 3.0, p
        assert p["version"] == project_version(), p
        assert not p["checkout_visible"], p
        for key in ("hvd", "core", "guard"):
            assert p[key].startswith(f"{home}/"), (key, p)
        assert p["guard"] == f"{home}/bin/hvdrun", p
    assert [p["host"] for p in found] == hosts, found


def run_elastic_with_a_kill(tools, program, hosts, python, example, env,
                            cwd):
    """The elastic example on `hosts` (one slot each), rank 1 killed with
    SIGKILL after its first step; the job goes on with one worker."""
    discover = cwd / "discover.sh"
    discover.write_text("#!/bin/sh\n" + "".join(
        f"echo {h}:1\n" for h in hosts))
    discover.chmod(0o755)
    child = start_hvdrun(
        ["-np", "2", "--min-np", "1", "--max-np", "2",
         "--host-discovery-script", str(discover), "--discovery-interval",
         "0.5", str(tools / "hide"), str(ROOT), python, str(example),
         "--epochs", "3", "--step-delay", "0.05", "--trace-steps"],
        program=program, env=env, cwd=cwd)
    try:
        line = child.wait_for_line(
            lambda l: "first step: rank 1 of 2," in l, "rank 1's first step",
            timeout=120)
        os.kill(int(re.search(r"pid (\d+)", line).group(1)), signal.SIGKILL)
        result = child.finish(timeout=180)
    finally:
        if child.poll() is None:
            child.finish(timeout=1)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "reset: continuing with 1 workers" in result.stdout, out
    assert "training finished" in result.stdout, out


def test_the_wheel_holds_the_package_the_extension_and_the_programs(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = f"hvd-{project_version()}.data/data/bin/"
    for name in ("hvd/__init__.py", "hvd/torch/__init__.py",
                 "_hvd_core.cpython-311-x86_64-linux-gnu.so",
                 data + "hvdrun", data + "hvd-slurm-discover"):
        assert name in names, sorted(names)


def test_a_wheel_in_a_venv_runs_a_job_with_the_checkout_hidden(
        venv, tools, tmp_path):
    version = subprocess.run([str(venv / "bin" / "hvdrun"), "--version"],
                             capture_output=True, text=True, timeout=30)
    assert version.stdout.strip() == project_version(), version
    # --check-build from the venv says what the installed extension says.
    check = subprocess.run([str(venv / "bin" / "hvdrun"), "--check-build"],
                           capture_output=True, text=True, timeout=30)
    built = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import hvd; print(bool(hvd.nccl_built()), hvd.gloo_built())"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    nccl, gloo = built.stdout.split()
    assert ("[X] NCCL" in check.stdout) == (nccl == "True"), (check, built)
    assert ("[X] Gloo" in check.stdout) and gloo == "True", (check, built)
    child = start_hvdrun(["-np", "2", "python", str(tools / "probe.py"),
                          str(ROOT / "CMakeLists.txt")],
                         program=hidden(tools, venv / "bin" / "hvdrun"),
                         env=venv_env(venv), cwd=tmp_path)
    result = child.finish(timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    host = subprocess.run(["hostname"], capture_output=True,
                          text=True).stdout.strip()
    check_probes(probes(result.stdout), str(venv), [host, host])


def test_a_wheel_in_a_venv_runs_an_elastic_job_through_a_kill(
        venv, tools, tmp_path):
    example = tmp_path / "torch_elastic_train.py"
    example.write_bytes((ROOT / "examples" / example.name).read_bytes())
    run_elastic_with_a_kill(
        tools, hidden(tools, venv / "bin" / "hvdrun"),
        ["localhost", "127.0.0.2"], "python", example, venv_env(venv),
        tmp_path)


def test_a_prefix_install_runs_a_job_over_ssh_with_the_checkout_hidden(
        prefix, tools, bed, tmp_path):
    hosts = bed.up(2)
    child = start_hvdrun(
        ["-H", ",".join(f"{h}:1" for h in hosts), str(tools / "hide"),
         str(ROOT), PYTHON, str(tools / "probe.py"),
         str(ROOT / "CMakeLists.txt")],
        program=hidden(tools, prefix / "bin" / "hvdrun"),
        env=prefix_env(prefix), cwd=tmp_path)
    result = child.finish(timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_probes(probes(result.stdout), str(prefix), hosts)


def test_a_prefix_install_runs_an_elastic_job_over_ssh_through_a_kill(
        prefix, tools, bed, tmp_path):
    hosts = bed.up(2)
    example = (prefix / "share" / "doc" / "hvd" / "examples" /
               "torch_elastic_train.py")
    run_elastic_with_a_kill(
        tools, hidden(tools, prefix / "bin" / "hvdrun"),
        hosts, PYTHON, example, prefix_env(prefix), tmp_path)


def declared_run_packages():
    script = ("source scripts/lib/common.sh; source scripts/lib/packages.sh; "
              "echo \"${hvd_run_packages[*]}\"")
    return subprocess.run(["bash", "-c", script], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.split()


def owning_package(path):
    """The Debian package that installed `path` (merged /usr: dpkg may know
    it under /lib or /usr/lib)."""
    real = os.path.realpath(path)
    for candidate in (real, re.sub(r"^/usr/lib/", "/lib/", real),
                      re.sub(r"^/lib/", "/usr/lib/", real)):
        found = subprocess.run(["dpkg", "-S", candidate], capture_output=True,
                               text=True)
        if found.returncode == 0:
            return found.stdout.split(":")[0]
    pytest.fail(f"no Debian package owns {path} ({real})")


def test_the_installed_programs_load_only_what_the_run_packages_provide(
        prefix):
    """Every library hvdrun and the extension ask for comes from a package
    of hvd_run_packages (docs/install.md lists them for every node) or
    from the C library every Debian has; and every library package there
    is one they ask for."""
    declared = set(declared_run_packages())
    programs = [prefix / "bin" / "hvdrun",
                *(prefix / "lib" / "python3" / "dist-packages").glob(
                    "_hvd_core.*.so")]
    assert len(programs) == 2, programs
    owners = set()
    for program in programs:
        dynamic = subprocess.run(["readelf", "-d", str(program)], check=True,
                                 capture_output=True, text=True).stdout
        needed = re.findall(r"\(NEEDED\).*\[(.+)\]", dynamic)
        resolved = dict(re.findall(r"^\s*(\S+) => (\S+)", subprocess.run(
            ["ldd", str(program)], check=True, capture_output=True,
            text=True).stdout, re.M))
        for library in needed:
            if library.startswith("ld-linux"):
                continue
            assert library in resolved, (program, library)
            owners.add(owning_package(resolved[library]))
    required = {"libc6", "libgcc-s1"}
    assert owners - required <= declared, owners - required - declared
    libraries = {p for p in declared if p.startswith("lib")}
    assert libraries <= owners, libraries - owners


def test_a_wheel_build_refuses_a_switch_for_a_part_hvd_lacks(tmp_path):
    result = subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--no-index", "-w", str(tmp_path), str(ROOT)],
        cwd=ROOT, env=dict(os.environ, HOROVOD_WITH_MPI="1"),
        capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "HOROVOD_WITH_MPI=1: hvd's controller is Gloo" in (
        result.stdout + result.stderr), result.stdout + result.stderr
    assert not list(tmp_path.glob("*.whl"))
