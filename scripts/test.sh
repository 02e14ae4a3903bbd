#!/usr/bin/env bash
# Installs and builds (scripts/setup.sh), then runs every test in stages
# (docs/testing.md says what each covers and how to run one alone):
#   ctest   the C++ tests of the normal build
#   asan    a clang ASan+UBSan build of every C++ test (build-asan/), ctest
#   tsan    a clang TSan build of the rendezvous and runtime tests
#           (build-tsan/), ctest
#   fuzz    each libFuzzer target of tests/fuzz for 30 s, two at a time, on a
#           copy of its corpus (the ASan+UBSan build)
#   gpu     the tests that need a GPU (ctest label gpu) when nvidia-smi sees
#           one; otherwise one line naming them as not run, and why, and a
#           check that each C++ one reports itself skipped under ctest
#   pytest  end-to-end tests through the real hvdrun
# Prints each stage's duration. A failed stage does not stop the later ones;
# the script then ends with a line naming the failed stages and exits 1.
# With pytest, the tsan and fuzz stages run beside it, one after the other,
# at the lowest CPU priority, and report after pytest's summary.
# Environment: HVD_TEST_STAGES="asan fuzz" runs only those stages (a local
# shortcut: the skipped ones are named), HVD_FUZZ_SECONDS changes the 30 s,
# HVD_PYTEST_WORKERS the 3 pytest workers, CI=true turns compiler warnings
# into errors (as in setup.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$hvd_root/scripts/lib/packages.sh"

all_stages="ctest asan tsan fuzz gpu pytest"
stages="${HVD_TEST_STAGES:-$all_stages}"
fuzz_seconds="${HVD_FUZZ_SECONDS:-30}"
pytest_workers="${HVD_PYTEST_WORKERS:-3}"
jobs="$(nproc)"
werror=OFF
[ -n "${CI:-}" ] && werror=ON

for stage in $stages; do
  [[ " $all_stages " == *" $stage "* ]] ||
    hvd_die "unknown stage '$stage' in HVD_TEST_STAGES (stages: $all_stages)"
done
skipped=""
for stage in $all_stages; do
  [[ " $stages " == *" $stage "* ]] || skipped+=" $stage"
done
wants() { [[ " $stages " == *" $1 "* ]]; }

failed=()
durations=()
# run_stage NAME FUNCTION: runs it, times it, records a failure.
run_stage() {
  local name="$1" start=$SECONDS result=ok
  echo "== stage $name ($(date +%H:%M:%S), load average $(cut -d' ' -f1-3 /proc/loadavg))"
  if ! "$2"; then
    result=FAILED
    failed+=("$name")
  fi
  local took=$((SECONDS - start))
  durations+=("$(printf '%-8s %5d s  %s' "$name" "$took" "$result")")
  echo "== stage $name: $result in $took s"
}

stage_setup() {
  "$hvd_root/scripts/setup.sh" --with-tests --with-benchmarks || return 1
  # What only the tests need, for the stages that run
  # (scripts/lib/packages.sh).
  if wants asan || wants tsan || wants fuzz; then
    hvd_ensure_packages "${hvd_sanitizer_packages[@]}" || return 1
  fi
  if wants pytest || wants gpu; then
    hvd_ensure_packages "${hvd_pytest_packages[@]}" "${hvd_wheel_packages[@]}" \
      "${hvd_bed_packages[@]}" "${hvd_slurm_packages[@]}" || return 1
  fi
  # etcd: a member the C++ client's tests start, the bed's cluster.
  if wants ctest || wants asan || wants tsan || wants pytest; then
    hvd_ensure_packages "${hvd_etcd_packages[@]}" || return 1
  fi
  # The status page's browser test: Debian's chromium, driven by
  # playwright-core from npm (the version tests/browser/package-lock.json
  # pins).
  if wants pytest; then
    # (An npm from elsewhere than Debian will do.)
    command -v npm >/dev/null || hvd_ensure_packages nodejs npm || return 1
    hvd_ensure_packages chromium || return 1
    if [ ! -d "$hvd_root/tests/browser/node_modules/playwright-core" ]; then
      (cd "$hvd_root/tests/browser" && npm ci --no-audit --no-fund --loglevel=error) ||
        return 1
    fi
  fi
}

# The layering the linker cannot check (docs/design.md, "Components"): the
# rendezvous server side, the etcd client and the launcher never include
# Gloo or the runtime;
# the runtime's private headers never include its front door runtime.h.
stage_layering() {
  if grep -rnE '#include [<"](gloo/|hvd/runtime)' "$hvd_root/launcher" \
       "$hvd_root/rendezvous/src/server.cc" "$hvd_root/rendezvous/src/kv_store.cc" \
       "$hvd_root/rendezvous/src/routes_kv.cc" \
       "$hvd_root/rendezvous/src/etcd_client.cc" "$hvd_root/rendezvous/src/etcd_json.cc" \
       "$hvd_root/rendezvous/include/hvd/rendezvous/etcd_client.h" \
       "$hvd_root/rendezvous/include/hvd/rendezvous/server.h" \
       "$hvd_root/rendezvous/include/hvd/rendezvous/kv_store.h"; then
    echo "error: the launcher and the rendezvous server must not depend on Gloo or the runtime" >&2
    return 1
  fi
  if grep -rnE '#include .*launcher' "$hvd_root/runtime"; then
    echo "error: the runtime must not include launcher code" >&2
    return 1
  fi
  # launcher/src's and runtime/src's folders: no include runs back up
  # (each folder's README.md).
  source "$hvd_root/scripts/lib/folder_layers.sh"
  hvd_check_folder_layers "$hvd_root" || return 1
  # The runtime's private headers take its value types from types.h; only
  # .cc files may open the front door.
  if grep -rnE '#include [<"]hvd/runtime/runtime\.h' --include='*.h' \
       "$hvd_root/runtime/src"; then
    echo "error: a header in runtime/src includes hvd/runtime/runtime.h (use hvd/runtime/types.h)" >&2
    return 1
  fi
  # What differs between collectives is a row of the op tables
  # (runtime/src/negotiation/op_info.cc, runtime/src/ops/op_table.cc), not
  # a case in every part.
  if grep -rn 'case OpType::' "$hvd_root/runtime"; then
    echo "error: a switch on OpType outside the op table (add a column to runtime/src/negotiation/op_info.h or runtime/src/ops/op_table.h)" >&2
    return 1
  fi
}

# The gpu label is the gpu stage's (tests/gpu).
stage_ctest() {
  (cd "$hvd_root/build" &&
    ctest --output-on-failure -j"$jobs" --timeout 300 -LE '^gpu$')
}

# sanitizer_build DIR SANITIZE FUZZ [TARGET...]: configures DIR with clang
# and the sanitizer, then builds the targets (all without any). -O1 and line
# tables only: about half the compile time of -O2 -g, still readable traces;
# the test files themselves at -O0 (HVD_UNOPTIMIZED_TESTS).
sanitizer_build() {
  local dir="$hvd_root/$1" sanitize="$2" fuzz="$3"
  shift 3
  local log
  log="$(mktemp)"
  if ! CC=clang CXX=clang++ hvd_cmake_configure "$dir" \
        -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
        -DHVD_WERROR="$werror" -DHVD_SANITIZE="$sanitize" -DHVD_FUZZ="$fuzz" \
        -DHVD_UNOPTIMIZED_TESTS=ON \
        -DHVD_WITH_PYTHON=OFF -DHVD_BUILD_BENCHMARKS=OFF >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "error: cmake configure of $dir failed (log: $log)" >&2
    return 1
  fi
  mv "$log" "$dir/build.log"
  log="$dir/build.log"
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  if ! cmake --build "$dir" -j"$jobs" "${targets[@]}" >>"$log" 2>&1; then
    grep -E "error|Error" -A5 "$log" | head -n 60 >&2
    echo "error: build of $dir failed (full log: $log)" >&2
    return 1
  fi
}

# sanitizer_ctest DIR [CTEST ARGS...]: the whole output goes to a log; the
# summary is printed, and on failure the output of the failed tests.
sanitizer_ctest() {
  local dir="$hvd_root/$1"
  shift
  local log="$dir/ctest.log"
  if (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 300 "$@") >"$log" 2>&1; then
    grep -E "tests passed" "$log"
    return 0
  fi
  grep -vE '^ *Start +[0-9]+: |Test +#[0-9]+: .* Passed' "$log" | head -n 400
  echo "error: a test failed under the sanitizer (full log: $log)" >&2
  return 1
}

asan_built=""
build_asan() {
  [ -n "$asan_built" ] && return 0
  sanitizer_build build-asan address ON && asan_built=yes
}

stage_asan() {
  build_asan || return 1
  sanitizer_ctest build-asan -LE '^gpu$'
}

stage_tsan() {
  sanitizer_build build-tsan thread OFF hvd_tests_rendezvous hvd_tests_runtime || return 1
  sanitizer_ctest build-tsan -L '^(rendezvous|runtime)$'
}

# run_fuzzer NAME BINARY CORPUS DICT WORK: libFuzzer on a copy of CORPUS in
# WORK/NAME, so the repository is never written; exit status in WORK/NAME/rc.
run_fuzzer() {
  local name="$1" binary="$2" corpus="$3" dict="$4" work="$5/$1"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -R "$corpus/." "$work/corpus/"
  local args=(-max_total_time="$fuzz_seconds" -timeout=5 -rss_limit_mb=1024
              -artifact_prefix="$work/artifacts/")
  [ "$dict" != "-" ] && args+=(-dict="$dict")
  local rc=0
  UBSAN_OPTIONS=print_stacktrace=1 "$binary" "${args[@]}" "$work/corpus" \
    >"$work/log" 2>&1 || rc=$?
  echo "$rc" >"$work/rc"
}

stage_fuzz() {
  build_asan || return 1
  local manifest="$hvd_root/build-asan/tests/fuzz/fuzz_targets.txt"
  local work
  work="$(mktemp -d)"
  local names=() running=0 name binary corpus dict
  while IFS=$'\t' read -r name binary corpus dict; do
    [[ -z "$name" || "$name" == "#"* ]] && continue
    names+=("$name")
    run_fuzzer "$name" "$binary" "$corpus" "$dict" "$work" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
  done <"$manifest"
  wait
  [ ${#names[@]} -gt 0 ] || { echo "error: no fuzz targets in $manifest" >&2; return 1; }
  local result=0 rc runs
  for name in "${names[@]}"; do
    rc="$(cat "$work/$name/rc")"
    runs="$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$work/$name/log" | tail -n 1)"
    if [ "$rc" = 0 ]; then
      echo "fuzz $name: ok (${runs:-no run count}s, corpus $(ls "$work/$name/corpus" | wc -l) inputs)"
      continue
    fi
    result=1
    tail -n 80 "$work/$name/log"
    echo "error: fuzz target $name failed (exit $rc). Input(s): $(ls -d "$work/$name/artifacts/"* 2>/dev/null | tr '\n' ' ')"
    echo "  Reproduce: $binary <input>; then copy the input to tests/fuzz/regressions/$name/ and fix the bug (docs/testing.md)."
  done
  if [ "$result" = 0 ]; then
    rm -rf "$work"
  else
    echo "error: fuzzing found failures; their logs and inputs are kept in $work" >&2
  fi
  return "$result"
}

# The GPU tests run where nvidia-smi lists a device. Elsewhere they are
# named as not run, with the reason, here and again at the end: never a
# silent pass: the C++ ones (tests/gpu/, ctest label gpu) and test_gpu.py
# through hvdrun. A build without NCCL has none (tests/gpu needs it).
gpu_note=""
gpu_pytest=tests/integration/test_gpu.py
stage_gpu() {
  local names devices reason=""
  names="$(cd "$hvd_root/build" && ctest -N -L '^gpu$' |
    sed -n 's/^ *Test *#[0-9]*: //p' | paste -sd ' ')"
  if [ -n "$names" ]; then
    names="$names $(cd "$hvd_root" && /usr/bin/python3 -m pytest -q \
      -p no:cacheprovider --collect-only "$gpu_pytest" |
      sed -n 's/^tests\/integration\///p' | grep '::' | paste -sd ' ')"
  fi
  if [ -z "$names" ]; then
    gpu_note="gpu: no GPU tests in this build (it has no NCCL: HVD_WITH_NCCL, docs/gpu.md)"
    echo "$gpu_note"
    return 0
  fi
  if ! command -v nvidia-smi >/dev/null; then
    reason="nvidia-smi is not installed"
  elif ! devices="$(nvidia-smi -L 2>&1)" || ! grep -q '^GPU ' <<<"$devices"; then
    reason="nvidia-smi -L: $(head -n 1 <<<"${devices:-no output}")"
  fi
  if [ -n "$reason" ]; then
    gpu_note="gpu: $(wc -w <<<"$names") tests not run, no GPU here ($reason): $names"
    echo "$gpu_note"
    # A newcomer's plain ctest stays green here: each C++ GPU test must
    # report itself skipped (with its reason), not fail.
    local run listed skipped
    run="$(cd "$hvd_root/build" && ctest --timeout 60 -L '^gpu$' 2>&1)" || {
      echo "$run"
      echo "gpu: a C++ GPU test failed where no GPU is, instead of skipping"
      return 1
    }
    listed="$(cd "$hvd_root/build" && ctest -N -L '^gpu$' | grep -c 'Test *#')"
    skipped="$(grep -c '(Skipped)' <<<"$run")"
    if [ "$listed" != "$skipped" ]; then
      echo "$run"
      echo "gpu: $skipped of $listed C++ GPU tests reported skipped without a GPU"
      return 1
    fi
    return 0
  fi
  echo "$devices"
  # A GPU test skips where it finds no usable GPU; here that is a failure.
  (cd "$hvd_root/build" &&
    HVD_TEST_REQUIRE_GPU=1 ctest --output-on-failure --timeout 300 -L '^gpu$') &&
    (cd "$hvd_root" && /usr/bin/python3 -m pytest -q -p no:cacheprovider \
      -rs "$gpu_pytest")
}

# The 15 slowest tests are listed before the summary: where the time budget
# (docs/testing.md) goes. The files run side by side, pytest_workers at a
# time (pytest-xdist), each file whole on one worker: a module's shared job
# runs once, and each worker has its own test bed (tests/integration/
# conftest.py). The tests mostly wait on their jobs, so more workers than
# cores pay.
stage_pytest() {
  (cd "$hvd_root" && /usr/bin/python3 -m pytest -q -p no:cacheprovider \
    -n "$pytest_workers" --dist loadfile \
    --durations=15 --ignore="$gpu_pytest" tests/integration)
}

if [ -n "$skipped" ]; then
  echo "note: HVD_TEST_STAGES skips:$skipped"
fi
run_stage setup stage_setup
[ ${#failed[@]} -eq 0 ] || hvd_die "setup failed: nothing was tested"
run_stage layering stage_layering
# With pytest, the tsan and fuzz stages run beside it, one after the other:
# at the lowest CPU priority (nice 19) they take only what pytest's jobs,
# which mostly wait, leave idle, so they take pytest's time rather than the
# sum (docs/testing.md, "Time budget"). Their reports come after pytest's.
beside_pytest=()
if wants pytest; then
  for stage in tsan fuzz; do
    if wants "$stage"; then beside_pytest+=("$stage"); fi
  done
fi
beside() { [[ " ${beside_pytest[*]} " == *" $1 "* ]]; }
for stage in ctest asan tsan fuzz gpu; do
  if wants "$stage" && ! beside "$stage"; then
    run_stage "$stage" "stage_$stage"
  fi
done

echo "stage durations:"
printf '  %s\n' "${durations[@]}"
[ -n "$gpu_note" ] && echo "$gpu_note"
if wants pytest; then
  beside_pid=""
  if [ ${#beside_pytest[@]} -gt 0 ]; then
    beside_log="$(mktemp)"
    beside_failed="$(mktemp)"
    (
      renice -n 19 -p "$BASHPID" >/dev/null
      failed=()
      for stage in "${beside_pytest[@]}"; do
        run_stage "$stage" "stage_$stage"
      done
      printf '%s\n' "${failed[@]}" >"$beside_failed"
    ) >"$beside_log" 2>&1 &
    beside_pid=$!
  fi
  # Not through run_stage: its summary line carries its duration.
  echo "== stage pytest ($(date +%H:%M:%S), load average $(cut -d' ' -f1-3 /proc/loadavg))"
  stage_pytest || failed+=(pytest)
  if [ -n "$beside_pid" ]; then
    wait "$beside_pid" || failed+=("${beside_pytest[@]}")
    cat "$beside_log"
    while read -r stage; do
      [ -n "$stage" ] && failed+=("$stage")
    done <"$beside_failed"
    rm -f "$beside_log" "$beside_failed"
  fi
fi
if [ ${#failed[@]} -gt 0 ]; then
  hvd_die "failed stages: ${failed[*]} (see each stage's messages above)"
fi
