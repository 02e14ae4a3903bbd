"""What a wheel build asks CMake for, from Horovod's build switches in the
environment (docs/install.md, "Build switches"). Pure: tested without a
build (tests/integration/test_build_options.py).

hvd's only optional part is the NCCL backend. Gloo, the PyTorch extension,
the Slurm launcher and the status page are always built; a switch that asks
for a part hvd does not have (MPI, TensorFlow, ...) or to leave out one it
always builds is refused with a reason, not ignored.
"""

import re

# Switches for parts hvd never has: HOROVOD_WITH_<x>=1 is refused,
# HOROVOD_WITHOUT_<x>=1 changes nothing.
ABSENT = {
    "MPI": "hvd's controller is Gloo; it has no MPI controller",
    "TENSORFLOW": "hvd's framework is PyTorch",
    "MXNET": "hvd's framework is PyTorch",
    "CCL": "hvd has no oneCCL backend",
    "DDL": "hvd has no DDL backend",
}
# Parts hvd always builds: HOROVOD_WITHOUT_<x>=1 is refused.
ALWAYS = {
    "GLOO": "Gloo is hvd's controller and CPU backend",
    "PYTORCH": "hvd.torch is the Python API hvd exists for",
}


class BuildOptionError(ValueError):
    """A switch this build cannot honour; the message says which and why."""


def _on(env, name):
    value = env.get(name, "").strip()
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise BuildOptionError(f"{name}={value!r}: use 1 or 0")


def nccl_mode(env):
    """auto, on or off: CMake's HVD_WITH_NCCL for these switches."""
    wanted = []
    if _on(env, "HOROVOD_WITH_NCCL"):
        wanted.append(("on", "HOROVOD_WITH_NCCL=1"))
    if _on(env, "HOROVOD_WITHOUT_NCCL"):
        wanted.append(("off", "HOROVOD_WITHOUT_NCCL=1"))
    for name in ("HOROVOD_GPU_OPERATIONS", "HOROVOD_GPU_ALLREDUCE",
                 "HOROVOD_GPU_ALLGATHER", "HOROVOD_GPU_BROADCAST",
                 "HOROVOD_GPU_ALLTOALL", "HOROVOD_GPU_REDUCESCATTER"):
        value = env.get(name, "").strip()
        if not value:
            continue
        if value.upper() != "NCCL":
            raise BuildOptionError(
                f"{name}={value}: hvd runs GPU collectives through NCCL only")
        wanted.append(("on", f"{name}={value}"))
    modes = {mode for mode, _ in wanted}
    if len(modes) > 1:
        raise BuildOptionError(
            "contradicting switches: " + ", ".join(why for _, why in wanted))
    return modes.pop() if modes else "auto"


def cmake_arguments(env, python):
    """The -D arguments for configuring a wheel's build with `python` as the
    interpreter, after checking every HOROVOD_WITH*/WITHOUT* switch."""
    for name in sorted(env):
        match = re.fullmatch(r"HOROVOD_(WITH|WITHOUT)_(\w+)", name)
        if not match or not _on(env, name):
            continue
        kind, part = match.groups()
        if kind == "WITH" and part in ABSENT:
            raise BuildOptionError(f"{name}=1: {ABSENT[part]}")
        if kind == "WITHOUT" and part in ALWAYS:
            raise BuildOptionError(f"{name}=1: {ALWAYS[part]}")
        if part not in ABSENT and part not in ALWAYS and part != "NCCL":
            raise BuildOptionError(
                f"{name}=1: hvd has no optional part called {part}")
    args = [f"-DHVD_WITH_NCCL={nccl_mode(env)}", "-DHVD_WITH_PYTHON=ON",
            f"-DPython3_EXECUTABLE={python}"]
    if env.get("HOROVOD_CUDA_HOME"):
        args.append(f"-DCUDAToolkit_ROOT={env['HOROVOD_CUDA_HOME']}")
    if env.get("HOROVOD_NCCL_HOME"):
        args.append(f"-DHVD_NCCL_ROOT={env['HOROVOD_NCCL_HOME']}")
    if _on(env, "HOROVOD_DEBUG"):
        args.append("-DCMAKE_BUILD_TYPE=Debug")
    return args


def project_version(cmakelists_text):
    """The VERSION of project(hvd ...): hvd's one version number."""
    match = re.search(r"^project\(hvd VERSION ([0-9]+\.[0-9]+\.[0-9]+)\b",
                      cmakelists_text, re.MULTILINE)
    if not match:
        raise BuildOptionError(
            "CMakeLists.txt has no project(hvd VERSION x.y.z)")
    return match.group(1)
