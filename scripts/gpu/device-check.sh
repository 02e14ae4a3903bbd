#!/usr/bin/env bash
# The GPU machine's check (issue 34, docs/gpu.md "The device check"): run
# from the repository's root with gpu-bundle/ (scripts/gpu/bundle.sh)
# beside the tree, on a bare machine with CUDA, Python and torch. In one
# call, each stage under its own deadline and all of them inside
# HVD_CHECK_SECONDS, it sets up from the bundle, builds the extension
# against that machine's Python, and runs:
#   bundle          the bundle matches the tree; hvdrun loads and runs
#   machine         nvidia-smi, torch's CUDA and NCCL, hvdrun --check-build
#   extension       the extension built there; `import hvd.torch`
#   cpp-gpu         tests/gpu (the NCCL seam, life-cycle, abort, watchdog,
#                   a one-rank runtime on the GPU against the host)
#   python-gpu      tests/integration/test_gpu.py through hvdrun, then
#                   docs/gpu.md's training script on the GPU
#   bench-allreduce shared memory at 4 and 8 ranks against raw Gloo and
#                   torch's Gloo, 16 to 256 MiB (issue 16's figure)
#   bench-fusion    ResNet-50's gradient set at 4 and 8 ranks against DDP's
#                   buckets
# A stage that needs a GPU says "no GPU" where there is none, in the same
# format; --rehearse runs the benchmarks small and builds the extension
# without optimisation, so that the whole script can be tried on a CPU
# machine (tests/integration/test_gpu_check.py does).
# Writes to $OUT: results.txt (one line per stage), device-check.log (every
# stage's output) and the benchmarks' reports and raw results. Exits 1 if
# a stage failed or ran out of time.
#
#   OUT=DIR scripts/gpu/device-check.sh [--rehearse]
# Environment: HVD_PYTHON (default python3 on the PATH: the machine's own,
# with torch), HVD_CHECK_SECONDS (the whole check's deadline, default 480),
# HVD_CHECK_STAGES (only these stages, and bundle, e.g. "extension
# bench-fusion" to run one again).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/gpu/sources_hash.sh

rehearse=0
[ "${1:-}" = --rehearse ] && rehearse=1
out="${OUT:?set OUT to the folder the results go to}"
mkdir -p "$out"
log="$out/device-check.log"
results="$out/results.txt"
: >"$log"
: >"$results"
started=$SECONDS
python="${HVD_PYTHON:-$(command -v python3)}"
total="${HVD_CHECK_SECONDS:-480}"
bundle="$root/gpu-bundle"
export HVD_BUILD_DIR="$bundle/build" HVD_PYTHON="$python"
export PYTHONPATH="$HVD_BUILD_DIR/python:$root/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
hvdrun="$HVD_BUILD_DIR/launcher/hvdrun"

# GPUs as nvidia-smi lists them; the reason there are none otherwise.
gpus=0
no_gpu=""
if ! command -v nvidia-smi >/dev/null; then
  no_gpu="nvidia-smi is not installed"
elif ! gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" || [ "$gpus" -eq 0 ]; then
  gpus=0
  no_gpu="nvidia-smi lists no GPU"
fi

# Where the machine's CUDA runtime and NCCL are: torch's wheels keep them
# under site-packages/nvidia; a toolkit under /usr/local/cuda. hvd loads
# them by soname (docs/gpu.md, "Building").
cuda_libs() {
  "$python" - <<'EOF' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
dirs = set()
for r in roots:
    for pattern in ("libnccl.so.*", "libcudart.so.*"):
        for f in glob.glob(os.path.join(r, "nvidia", "**", pattern), recursive=True):
            dirs.add(os.path.dirname(f))
for d in ("/usr/local/cuda/lib64",):
    if os.path.isdir(d):
        dirs.add(d)
print(":".join(sorted(dirs)))
EOF
}

# Every library of the bundle comes first, except those every Linux has
# (zlib, OpenSSL 3), which stay the machine's own where it has them: its
# Python's modules load them too.
lib_dir="$bundle/run-lib"
rm -rf "$lib_dir"
mkdir -p "$lib_dir"
for f in "$bundle"/lib/*; do
  [ -e "$f" ] || continue
  soname="$(basename "$f")"
  case "$soname" in
    libz.so.1 | libssl.so.3 | libcrypto.so.3)
      ldconfig -p 2>/dev/null | grep -q " $soname " && continue ;;
  esac
  ln -s "$f" "$lib_dir/$soname"
done
export LD_LIBRARY_PATH="$lib_dir:$(cuda_libs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

say() { echo "$*" | tee -a "$results"; }

# run_stage NAME DEADLINE NEEDS_GPU FUNCTION: runs FUNCTION in its own
# process group under min(DEADLINE, what is left of the whole check less a
# margin), its output into the log, and writes one line for it.
failed=0
run_stage() {
  local name="$1" deadline="$2" needs_gpu="$3" fn="$4"
  if [ -n "${HVD_CHECK_STAGES:-}" ] && [[ " bundle $HVD_CHECK_STAGES " != *" $name "* ]]; then
    say "$name: not selected (HVD_CHECK_STAGES)"
    return
  fi
  if [ "$needs_gpu" = gpu ] && [ "$gpus" -eq 0 ]; then
    say "$name: no GPU ($no_gpu)"
    return
  fi
  local left=$((total - (SECONDS - started) - 10))
  if [ "$left" -lt 15 ]; then
    say "$name: NOT RUN (out of time: the check's deadline is ${total} s)"
    failed=1
    return
  fi
  [ "$deadline" -gt "$left" ] && deadline="$left"
  echo "=== $name (deadline ${deadline} s) $(date -Is)" >>"$log"
  local t0=$SECONDS rc=0 note
  timeout --kill-after=5 "$deadline" bash -c "set -o pipefail; $(declare -f "$fn" say_note); $fn" \
    >>"$log" 2>&1 || rc=$?
  note="$(cat "$out/.note" 2>/dev/null)"
  rm -f "$out/.note"
  if [ "$rc" -eq 0 ]; then
    say "$name: ok ($((SECONDS - t0)) s)${note:+: $note}"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    say "$name: TIMED OUT after ${deadline} s${note:+: $note} (log: device-check.log)"
    failed=1
  else
    say "$name: FAILED (exit $rc, $((SECONDS - t0)) s)${note:+: $note} (log: device-check.log)"
    failed=1
  fi
}
# say_note TEXT: a stage's summary, shown on its line of results.txt (two
# notes of one stage are joined with "; ").
say_note() {
  [ -s "$out/.note" ] && printf '; ' >>"$out/.note"
  printf '%s' "$*" >>"$out/.note"
}
export out python rehearse hvdrun gpus root bundle log

stage_bundle() {
  set -e
  [ -f "$bundle/MANIFEST" ] || { echo "no gpu-bundle/: run scripts/gpu/bundle.sh where the tree was built"; exit 1; }
  source scripts/gpu/sources_hash.sh
  local want have
  want="$(sed -n 's/^sources: //p' "$bundle/MANIFEST")"
  have="$(hvd_sources_hash "$root")"
  if [ "$want" != "$have" ]; then
    echo "gpu-bundle/ was made from other sources ($want, this tree $have): run scripts/gpu/bundle.sh again"
    exit 1
  fi
  cat "$bundle/MANIFEST"
  if ldd "$hvdrun" | grep 'not found'; then
    echo "hvdrun cannot load the libraries above"
    exit 1
  fi
  "$hvdrun" --version
  # The shared-memory benchmark maps a few GiB; a container's /dev/shm can
  # be 64 MiB. Raised on the GPU machine only (it is given back after).
  local shm_kib
  shm_kib="$(df -k --output=size /dev/shm 2>/dev/null | tail -n1 || echo 0)"
  if [ "$rehearse" = 0 ] && [ "$shm_kib" -lt $((8 * 1024 * 1024)) ] && [ "$(id -u)" = 0 ]; then
    mount -o remount,size=16G /dev/shm && echo "/dev/shm raised from ${shm_kib} KiB to 16 GiB"
  fi
  say_note "$(sed -n 's/^built: //p' "$bundle/MANIFEST"), $(ls "$bundle/lib" | wc -l) libraries"
}

stage_extension() {
  set -e
  echo "python: $python ($("$python" --version 2>&1))"
  local cxx
  cxx="$(command -v c++ || command -v g++)" || { echo "no C++ compiler (c++ or g++) on the PATH"; exit 1; }
  echo "compiler: $("$cxx" --version | head -n1)"
  local py_include suffix
  py_include="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  [ -f "$py_include/Python.h" ] || { echo "no Python.h under $py_include: $python has no development headers"; exit 1; }
  suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
  source "$bundle/ext/flags.sh"
  local opt=-O2
  [ "$rehearse" = 1 ] && opt=-O0
  # The machine's own pybind11 knows its Python; the bundle's (Debian's)
  # is the fallback.
  local pb_includes=() pb ok=0 s w
  pb="$("$python" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null)" &&
    pb_includes+=("$pb")
  pb_includes+=("$bundle/pybind11")
  local objdir="$bundle/build/python/obj" objs=()
  mkdir -p "$objdir"
  for s in "${ext_sources[@]}"; do objs+=("$objdir/$s.o"); done
  for pb in "${pb_includes[@]}"; do
    echo "compiling the extension with the pybind11 headers of $pb"
    local pids=()
    for s in "${ext_sources[@]}"; do
      "$cxx" $opt -fPIC "${ext_flags[@]}" -isystem "$py_include" -isystem "$pb" \
        -c "python/src/$s.cc" -o "$objdir/$s.o" &
      pids+=($!)
    done
    ok=1
    for s in "${pids[@]}"; do wait "$s" || ok=0; done
    [ "$ok" = 1 ] && break
  done
  [ "$ok" = 1 ] || { echo "the extension did not compile (above)"; exit 1; }
  local link=()
  for w in "${ext_link[@]}"; do
    case "$w" in -*) link+=("$w") ;; *) link+=("$bundle/$w") ;; esac
  done
  "$cxx" -shared -o "$bundle/build/python/_hvd_core$suffix" "${objs[@]}" \
    "${link[@]}" -Wl,-rpath-link,"$bundle/lib"
  "$python" -c 'import hvd, hvd.torch; print("import hvd.torch: ok, nccl_built", hvd.nccl_built())'
  say_note "extension built with $("$python" -c 'import sys; print("Python %d.%d" % sys.version_info[:2])'), $(basename "$cxx") $("$cxx" -dumpversion), pybind11 of $pb"
}

stage_machine() {
  set -e
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi || true
    nvidia-smi -L || true
  else
    echo "nvidia-smi: not installed"
  fi
  echo "cores: $(nproc); memory: $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"
  echo "kernel: $(uname -r); os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  df -h /dev/shm
  # torch once: its import is the slowest step here.
  local torch_line
  torch_line="$("$python" - <<'EOF'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), "count",
          torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())
EOF
)"
  echo "$torch_line"
  "$hvdrun" --check-build
  local card
  card="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1 || true)"
  say_note "${card:-no GPU}; $(nproc) cores; $(head -n1 <<<"$torch_line" | cut -d' ' -f1-4)"
}

stage_cpp_gpu() {
  HVD_TEST_REQUIRE_GPU=1 "$HVD_BUILD_DIR/tests/gpu/nccl_gpu_test" 2>&1 | tee "$out/.cpp"
  local rc=$?
  say_note "$(grep -oE '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ tests?' "$out/.cpp" |
    sed 's/^\[ *\([A-Z]*\) *\] \([0-9]*\).*/\2 \1/' | paste -sd, -)"
  rm -f "$out/.cpp"
  return "$rc"
}

stage_python_gpu() {
  local rc=0
  "$python" -m pytest -q -rs -p no:cacheprovider tests/integration/test_gpu.py \
    2>&1 | tee "$out/.pytest" || rc=$?
  say_note "$(grep -E '[0-9]+ (passed|failed|skipped)' "$out/.pytest" | tail -n1)"
  rm -f "$out/.pytest"
  # docs/gpu.md's training script, as a user would copy it.
  local script
  script="$(mktemp --suffix=.py)"
  awk '/^```python$/ { on = 1; next } /^```$/ { if (on) exit } on' docs/gpu.md >"$script"
  "$hvdrun" -np 1 "$python" "$script" 2>&1 | tee "$out/.train" || rc=$?
  grep -q 'epoch 4: loss' "$out/.train" || { echo "docs/gpu.md's script did not finish 5 epochs"; rc=1; }
  say_note "docs/gpu.md's script: $(grep -o 'epoch 4: loss [0-9.]*' "$out/.train" || echo 'did not finish')"
  rm -f "$out/.train" "$script"
  return "$rc"
}

# bench NAME SCRIPT ARGS...: one of scripts/bench/*/run.sh; its report and
# raw results go to $OUT as NAME-report.md and NAME-results.jsonl.
bench() {
  local name="$1" script="$2" dir
  shift 2
  "$script" "$@" 2>&1 | tee "$out/.bench"
  local rc=${PIPESTATUS[0]}
  dir="$(sed -n 's/^results: //p' "$out/.bench" | tail -n1)"
  rm -f "$out/.bench"
  if [ -n "$dir" ]; then
    cp "$dir/report.md" "$out/$name-report.md"
    cp "$dir/results.jsonl" "$out/$name-results.jsonl"
    echo "--- $dir/machine.txt"; cat "$dir/machine.txt"
    echo "--- the last lines of $dir/workers.log"; tail -n 20 "$dir/workers.log"
  fi
  return "$rc"
}

stage_bench_allreduce() {
  if [ "$rehearse" = 1 ]; then
    export HVD_BENCH_NP=2 HVD_BENCH_SIZES=1048576 HVD_BENCH_MIN_SECONDS=0.05
    bench allreduce scripts/bench/allreduce/run.sh 1
  else
    export HVD_BENCH_NP="4 8" HVD_BENCH_MIN_SECONDS=0.3
    export HVD_BENCH_SIZES=16777216,67108864,268435456
    bench allreduce scripts/bench/allreduce/run.sh 2
  fi
}

stage_bench_fusion() {
  export HVD_BENCH_ONLY=resnet50
  export HVD_BENCH_IMPLS="gloo torch-buckets hvd hvd-views hvd-grouped"
  if [ "$rehearse" = 1 ]; then
    HVD_BENCH_NP=2 HVD_BENCH_STEPS=2 bench fusion scripts/bench/fusion/run.sh 1
  else
    HVD_BENCH_NP="4 8" HVD_BENCH_STEPS=10 bench fusion scripts/bench/fusion/run.sh 1
  fi
}

export -f bench
echo "device check of $(sed -n 's/^built: //p' "$bundle/MANIFEST" 2>/dev/null)," \
  "$([ "$rehearse" = 1 ] && echo "rehearsal, ")deadline ${total} s" | tee -a "$results"
# Deadlines (seconds): each stage's own, all inside HVD_CHECK_SECONDS.
run_stage bundle 60 any stage_bundle
if grep -q '^bundle: ok' "$results"; then
  run_stage machine 60 any stage_machine
  run_stage extension 120 any stage_extension
  run_stage cpp-gpu 60 gpu stage_cpp_gpu
  run_stage python-gpu 120 gpu stage_python_gpu
  run_stage bench-allreduce 150 any stage_bench_allreduce
  run_stage bench-fusion 150 any stage_bench_fusion
else
  say "the other stages: NOT RUN (the bundle is unusable here)"
fi
echo "took $((SECONDS - started)) s" | tee -a "$results"
exit "$failed"
