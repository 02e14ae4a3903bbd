"""The wheel build's switches (packaging/build_options.py): Horovod's
HOROVOD_WITH_*/WITHOUT_* and HOROVOD_GPU_* mapped to CMake options, and
refused with a reason where hvd has no such part."""

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "packaging"))
from build_options import (BuildOptionError, cmake_arguments,  # noqa: E402
                           nccl_mode, project_version)


@pytest.mark.parametrize("env, mode", [
    ({}, "auto"),
    ({"HOROVOD_WITH_NCCL": "1"}, "on"),
    ({"HOROVOD_WITHOUT_NCCL": "1"}, "off"),
    ({"HOROVOD_WITHOUT_NCCL": "0"}, "auto"),
    ({"HOROVOD_GPU_OPERATIONS": "NCCL"}, "on"),
    ({"HOROVOD_GPU_ALLREDUCE": "nccl", "HOROVOD_WITH_NCCL": "1"}, "on"),
])
def test_nccl_mode_follows_the_switches(env, mode):
    assert nccl_mode(env) == mode


@pytest.mark.parametrize("env, says", [
    ({"HOROVOD_GPU_OPERATIONS": "MPI"}, "through NCCL only"),
    ({"HOROVOD_WITH_NCCL": "1", "HOROVOD_WITHOUT_NCCL": "1"},
     "contradicting switches"),
    ({"HOROVOD_GPU_ALLREDUCE": "NCCL", "HOROVOD_WITHOUT_NCCL": "1"},
     "contradicting switches"),
    ({"HOROVOD_WITH_NCCL": "yes"}, "use 1 or 0"),
])
def test_nccl_switches_that_cannot_hold_are_refused(env, says):
    with pytest.raises(BuildOptionError, match=says):
        nccl_mode(env)


@pytest.mark.parametrize("name, says", [
    ("HOROVOD_WITH_MPI", "no MPI controller"),
    ("HOROVOD_WITH_TENSORFLOW", "framework is PyTorch"),
    ("HOROVOD_WITH_MXNET", "framework is PyTorch"),
    ("HOROVOD_WITHOUT_GLOO", "Gloo is hvd's controller"),
    ("HOROVOD_WITHOUT_PYTORCH", "hvd.torch"),
    ("HOROVOD_WITH_FOO", "no optional part called FOO"),
])
def test_a_switch_for_a_part_hvd_lacks_or_always_builds_is_refused(name, says):
    with pytest.raises(BuildOptionError, match=says):
        cmake_arguments({name: "1"}, "/usr/bin/python3")


def test_switches_for_what_hvd_does_anyway_change_nothing():
    quiet = {"HOROVOD_WITHOUT_MPI": "1", "HOROVOD_WITH_GLOO": "1",
             "HOROVOD_WITH_PYTORCH": "1", "HOROVOD_WITHOUT_TENSORFLOW": "1",
             "HOROVOD_WITH_MPI": "0"}
    assert (cmake_arguments(quiet, "/py") == cmake_arguments({}, "/py") ==
            ["-DHVD_WITH_NCCL=auto", "-DHVD_WITH_PYTHON=ON",
             "-DPython3_EXECUTABLE=/py"])


def test_locations_and_debug_become_cmake_options():
    args = cmake_arguments({"HOROVOD_CUDA_HOME": "/opt/cuda",
                            "HOROVOD_NCCL_HOME": "/opt/nccl",
                            "HOROVOD_DEBUG": "1", "HOROVOD_WITH_NCCL": "1"},
                           "/py")
    assert args == ["-DHVD_WITH_NCCL=on", "-DHVD_WITH_PYTHON=ON",
                    "-DPython3_EXECUTABLE=/py", "-DCUDAToolkit_ROOT=/opt/cuda",
                    "-DHVD_NCCL_ROOT=/opt/nccl", "-DCMAKE_BUILD_TYPE=Debug"]


def test_the_version_is_the_cmake_projects():
    assert project_version(
        "cmake_minimum_required(VERSION 3.18)\n"
        "project(hvd VERSION 1.22.3 LANGUAGES CXX)\n") == "1.22.3"
    with pytest.raises(BuildOptionError, match="no project"):
        project_version("project(other VERSION 1.0.0)\n")
