"""hvd's wheel (docs/install.md):

    python3 -m pip wheel --no-build-isolation --no-deps .

builds hvdrun and the extension with CMake, lays them out with CMake's own
install rules (the prefix install's layout) and packs the hvd package, the
extension _hvd_core beside it, and hvdrun and hvd-slurm-discover as the
venv's programs. Horovod's HOROVOD_WITH_*/WITHOUT_* switches choose the
optional parts (packaging/build_options.py). HVD_CMAKE_BUILD_DIR packs an
already configured build folder instead of configuring one of its own.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "packaging"))
import build_options  # noqa: E402

# setuptools' own build folder (setup.cfg) and, inside it, the CMake build
# and the install that the wheel takes its files from.
WHEEL_BUILD = pathlib.Path("build") / "wheel"
STAGE = WHEEL_BUILD / "stage"
PROGRAMS = ["hvdrun", "hvd-slurm-discover"]


class CMakeBuild(build_ext):
    """Builds the two targets the wheel holds, installs them into STAGE and
    puts the extension where setuptools packs the package from."""

    def build_extension(self, ext):
        env = os.environ
        try:
            args = build_options.cmake_arguments(env, sys.executable)
        except build_options.BuildOptionError as e:
            sys.exit(f"hvd build: {e}")
        own = env.get("HVD_CMAKE_BUILD_DIR")
        if own:
            cmake_dir = pathlib.Path(own).resolve()
            check_configured(cmake_dir, env)
        else:
            # A folder of the wheel's own: only what the wheel holds.
            cmake_dir = ROOT / WHEEL_BUILD / "cmake"
            configure = ["cmake", "-S", str(ROOT), "-B", str(cmake_dir)]
            if not (cmake_dir / "CMakeCache.txt").exists():
                configure += ["-G", "Ninja"]
            configure += ["-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                          "-DHVD_BUILD_TESTS=OFF",
                          "-DHVD_BUILD_BENCHMARKS=OFF", *args]
            subprocess.run(configure, check=True)
        jobs = env.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count())
        subprocess.run(["cmake", "--build", str(cmake_dir), "-j", jobs,
                        "--target", "hvdrun", "_hvd_core"], check=True)
        stage = ROOT / STAGE
        shutil.rmtree(stage, ignore_errors=True)
        subprocess.run(["cmake", "--install", str(cmake_dir), "--prefix",
                        str(stage)], check=True, stdout=subprocess.DEVNULL)
        pythondir = stage / cmake_cache(cmake_dir, "HVD_INSTALL_PYTHONDIR")
        built = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(built), exist_ok=True)
        extension = [p for p in pythondir.iterdir()
                     if p.name.startswith("_hvd_core.")]
        if len(extension) != 1:
            sys.exit(f"hvd build: expected one _hvd_core in {pythondir}, "
                     f"found {[p.name for p in extension]}")
        shutil.copyfile(extension[0], built)


def check_configured(cmake_dir, env):
    """A build folder is packed as it was configured: no switch can change
    it, and its Python must be the one the wheel is for."""
    if not (cmake_dir / "CMakeCache.txt").exists():
        sys.exit(f"hvd build: HVD_CMAKE_BUILD_DIR={cmake_dir} is not a "
                 "configured build folder (scripts/setup.sh makes build/)")
    if (build_options.cmake_arguments(env, sys.executable) !=
            build_options.cmake_arguments({}, sys.executable)):
        sys.exit("hvd build: HOROVOD_* switches cannot change the "
                 f"configured folder {cmake_dir}: configure it with the "
                 "CMake options instead, or leave HVD_CMAKE_BUILD_DIR unset")
    built_for = cmake_cache(cmake_dir, "Python3_EXECUTABLE")
    if os.path.realpath(built_for) != os.path.realpath(sys.executable):
        sys.exit(f"hvd build: {cmake_dir} is built for {built_for}, not "
                 f"for {sys.executable}")


def cmake_cache(cmake_dir, name):
    for line in (cmake_dir / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    sys.exit(f"hvd build: {cmake_dir}/CMakeCache.txt has no {name}")


# egg_info's folder (setup.cfg) must exist before it runs.
os.makedirs(ROOT / WHEEL_BUILD, exist_ok=True)
setup(
    name="hvd",
    version=build_options.project_version(
        (ROOT / "CMakeLists.txt").read_text()),
    description="Elastic distributed training with Horovod's API: the "
                "hvdrun launcher, Gloo and NCCL collectives, hvd.torch",
    long_description=(ROOT / "docs" / "install.md").read_text(),
    long_description_content_type="text/markdown",
    package_dir={"": "python"},
    packages=["hvd", "hvd.elastic", "hvd.torch", "hvd.torch.collectives",
              "hvd.torch.elastic"],
    ext_modules=[Extension("_hvd_core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # Installed to the environment's bin/: pip keeps their mode.
    data_files=[("bin", [str(STAGE / "bin" / p) for p in PROGRAMS])],
    zip_safe=False,
)
