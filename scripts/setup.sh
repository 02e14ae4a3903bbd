#!/usr/bin/env bash
# Installs the Debian packages hvd needs (only the missing ones), then
# configures and builds into build/. Idempotent; quiet unless something fails.
# Environment: CI=true turns compiler warnings into errors.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

hvd_ensure_packages \
  g++ cmake make pkg-config \
  libgloo-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libssl-dev \
  libcli11-dev libgtest-dev python3 python3-pytest

werror=OFF
[ -n "${CI:-}" ] && werror=ON

build="$hvd_root/build"
mkdir -p "$build"
log="$build/setup.log"
if ! cmake -S "$hvd_root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DHVD_WERROR="$werror" >"$log" 2>&1; then
  cat "$log" >&2
  hvd_die "cmake configure failed (log: $log)"
fi
if ! cmake --build "$build" -j"$(nproc)" >>"$log" 2>&1; then
  grep -E "error|Error" -A5 "$log" | head -n 60 >&2
  hvd_die "build failed (full log: $log)"
fi
ln -sf build/compile_commands.json "$hvd_root/compile_commands.json"
