#!/usr/bin/env bash
# Installs the Debian packages hvd needs (only the missing ones), then
# configures and builds into build/. Idempotent; quiet unless something fails.
# Then puts the hvd Python package on the path of /usr/bin/python3 (or of
# $HVD_PYTHON, e.g. a venv made with --system-site-packages) with a .pth file
# naming python/ and build/python/, so `import hvd` works from any directory
# and always sees the current build.
# Environment: CI=true turns compiler warnings into errors, keeps only line
# tables as debug information (-g1) and compiles the test files at -O0.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

hvd_ensure_packages \
  g++ cmake ninja-build pkg-config lld \
  libgloo-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libssl-dev \
  libcli11-dev libyaml-cpp-dev libgtest-dev libboost-dev python3 python3-pytest \
  python3-dev pybind11-dev python3-numpy python3-torch python3-prometheus-client \
  openssh-server openssh-client iproute2 \
  slurmctld slurmd slurm-client slurmdbd munge mariadb-server

werror=OFF
debug_info=-g
unoptimized_tests=OFF
if [ -n "${CI:-}" ]; then
  werror=ON
  # Line tables only: enough for backtraces, and a fifth less compile time
  # (launcher/src/driver/driver.cc: 19.7 s with -g, 15.9 s with -g1); the test
  # files at -O0 (job_policy_test.cc: 16.3 s at -O2 -g, 5.6 s at -O0 -g1).
  # CI's 30 minutes need both.
  debug_info=-g1
  unoptimized_tests=ON
fi

build="$hvd_root/build"
# (The log starts outside build/, which the configure may empty.)
log="$(mktemp)"
if ! hvd_cmake_configure "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 $debug_info -DNDEBUG" \
      -DHVD_UNOPTIMIZED_TESTS="$unoptimized_tests" \
      -DHVD_WERROR="$werror" >"$log" 2>&1; then
  cat "$log" >&2
  hvd_die "cmake configure failed (log: $log)"
fi
mv "$log" "$build/setup.log"
log="$build/setup.log"
if ! cmake --build "$build" -j"$(nproc)" >>"$log" 2>&1; then
  grep -E "error|Error" -A5 "$log" | head -n 60 >&2
  hvd_die "build failed (full log: $log)"
fi
ln -sf build/compile_commands.json "$hvd_root/compile_commands.json"

python="${HVD_PYTHON:-/usr/bin/python3}"
site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
pth="$site/hvd.pth"
want="$(printf '%s\n%s\n' "$hvd_root/python" "$build/python")"
if [ "$(cat "$pth" 2>/dev/null)" != "$want" ]; then
  sudo=""
  if ! { mkdir -p "$site" && [ -w "$site" ]; } 2>/dev/null; then
    command -v sudo >/dev/null || hvd_die "cannot write $pth: run as root, or set HVD_PYTHON to a venv's python"
    sudo="sudo"
  fi
  $sudo mkdir -p "$site"
  printf '%s\n' "$want" | $sudo tee "$pth" >/dev/null
fi
"$python" -c 'import hvd' || hvd_die "$python cannot import hvd after setup ($pth)"
