#!/usr/bin/env bash
# Installs the Debian packages hvd needs to build and run (only the missing
# ones; scripts/lib/packages.sh lists them by purpose), then configures and
# builds into build/: hvdrun and the Python extension. Idempotent; quiet
# unless something fails. Then puts the hvd Python package on the path of
# /usr/bin/python3 (or of $HVD_PYTHON, e.g. a venv made with
# --system-site-packages) with a .pth file naming python/ and build/python/,
# so `import hvd` works from any directory and always sees the current
# build.
#   --with-tests        also the C++ tests (and libgtest-dev): scripts/test.sh
#   --with-benchmarks   also the C++ programs of scripts/bench
# Without them, a build/ configured with them keeps them (a developer's
# tree stays whole); a new one has neither.
# Environment: CI=true turns compiler warnings into errors, keeps only line
# tables as debug information (-g1) and compiles the test files at -O0.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$hvd_root/scripts/lib/packages.sh"

with_tests=""
with_benchmarks=""
for arg in "$@"; do
  case "$arg" in
    --with-tests) with_tests=ON ;;
    --with-benchmarks) with_benchmarks=ON ;;
    *) hvd_die "usage: $0 [--with-tests] [--with-benchmarks]" ;;
  esac
done
build="$hvd_root/build"
# A build/ of another generator is made anew (hvd_cmake_configure): new.
configured=""
grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt" 2>/dev/null &&
  configured=yes
parts=()
if [ -n "$with_tests" ] || [ -z "$configured" ]; then
  parts+=("-DHVD_BUILD_TESTS=${with_tests:-OFF}")
fi
if [ -n "$with_benchmarks" ] || [ -z "$configured" ]; then
  parts+=("-DHVD_BUILD_BENCHMARKS=${with_benchmarks:-OFF}")
fi

packages=("${hvd_build_packages[@]}" "${hvd_run_packages[@]}")
if [ -n "$with_tests" ] ||
   grep -qx 'HVD_BUILD_TESTS:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  packages+=("${hvd_unit_test_packages[@]}")
fi
clock() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(clock)" 'BEGIN { printf "%.0f", b - a }'; }
started=$(clock)
hvd_ensure_packages "${packages[@]}"
packages_s=$(since "$started")

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

# (The log starts outside build/, which the configure may empty.)
log="$(mktemp)"
started=$(clock)
if ! hvd_cmake_configure "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 $debug_info -DNDEBUG" \
      -DHVD_UNOPTIMIZED_TESTS="$unoptimized_tests" \
      "${parts[@]}" \
      -DHVD_WERROR="$werror" >"$log" 2>&1; then
  cat "$log" >&2
  hvd_die "cmake configure failed (log: $log)"
fi
configure_s=$(since "$started")
mv "$log" "$build/setup.log"
log="$build/setup.log"
started=$(clock)
if ! cmake --build "$build" -j"$(nproc)" >>"$log" 2>&1; then
  grep -E "error|Error" -A5 "$log" | head -n 60 >&2
  hvd_die "build failed (full log: $log)"
fi
# Where a newcomer's first minutes went (scripts/demo.sh prints it).
echo "setup: packages ${packages_s} s, configure ${configure_s} s, build $(since "$started") s" \
  >"$build/setup.times"
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
