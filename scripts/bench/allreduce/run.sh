#!/usr/bin/env bash
# Allreduce benchmark: raw Gloo, torch.distributed (backend gloo), hvd
# (hierarchical: shared memory inside the host) and hvd-flat (hvd with
# HOROVOD_HIERARCHICAL_ALLREDUCE=0: Gloo over all ranks), float32 sum from
# 4 KiB to 256 MiB at 2 and 4 ranks on this machine. They run interleaved
# (gloo, torch, hvd, hvd-flat, gloo, ...) so that they see the same machine
# state, each repeat after one measure of a single core's memcpy
# bandwidth; report.py prints the median busbw per size, the ratios to raw
# Gloo and hvd's busbw as a fraction of memcpy's, the tables in
# docs/benchmarks.md.
#
#   scripts/bench/allreduce/run.sh [repeats]      (default 3)
# Environment: HVD_BENCH_NP (default "2 4"), HVD_BENCH_SIZES (bytes, comma
# separated), HVD_BENCH_MIN_SECONDS (timed seconds per size, default 0.5).
# HVD_BENCH_IMPLS (a subset of "gloo torch hvd hvd-flat"), HVD_BUILD_DIR
# (default build/, which scripts/setup.sh builds first; any other build
# folder is used as it is), HVD_PYTHON (default /usr/bin/python3; a Python of
# your own, with its own torch and numpy, as on the GPU machine:
# scripts/gpu/device-check.sh).
# HVD_BENCH_BED=1 (root): instead, 2 hosts x 2 ranks of the test bed
# (scripts/cluster/, prefix "arb", net 10.231.0), raw Gloo, hvd and
# hvd-flat over real links between network namespaces (torch is left out:
# its rendezvous address would have to be a bed host's).
# Results: bench-results/allreduce/<timestamp>/{results.jsonl,report.md,...}
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../lib/common.sh"

# Other jobs on the machine move these numbers more than anything measured;
# read before our own build adds to it.
load="$(cut -d' ' -f1 /proc/loadavg)"
source "$here/../bench_env.sh"

repeats="${1:-3}"
nps="${HVD_BENCH_NP:-2 4}"
flags=(--min-seconds "${HVD_BENCH_MIN_SECONDS:-0.5}")
[ -n "${HVD_BENCH_SIZES:-}" ] && flags+=(--sizes "$HVD_BENCH_SIZES")

hvdrun="$build/launcher/hvdrun"
gloo_bench="$build/scripts/bench/allreduce/hvd_gloo_allreduce_bench"
dir="$hvd_root/bench-results/allreduce/$(date +%Y%m%d-%H%M%S)"
results="$dir/results.jsonl"
log="$dir/workers.log"
mkdir -p "$dir"
: >"$results"

impls=(gloo torch)
if "$python" -c 'import hvd' 2>/dev/null; then
  impls+=(hvd hvd-flat)
else
  echo "note: 'import hvd' fails in $python; hvd is skipped"
fi
bench_keep_impls impls

{
  echo "date: $(date -Is)"
  echo "commit: $(git -C "$hvd_root" rev-parse --short HEAD || echo unknown)"
  echo "cores: $cores; OMP_NUM_THREADS: $OMP_NUM_THREADS"
  echo "kernel: $(uname -r)"
  echo "torch: $("$python" -c 'import torch; print(torch.__version__)')"
  echo "load average before the build: $load"
  echo "repeats: $repeats; np: $nps; flags: ${flags[*]}"
} >"$dir/machine.txt"
if awk -v l="$load" -v c="$cores" 'BEGIN { exit !(l > c / 2) }'; then
  echo "note: load average is $load on $cores cores;" \
    "other work will skew the results"
fi

free_port() {
  "$python" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

where=()  # hvdrun's hosts: -np N here, the bed's with HVD_BENCH_BED
if [ -n "${HVD_BENCH_BED:-}" ]; then
  export HVD_BED_PREFIX=arb HVD_BED_NET=10.231.0
  mapfile -t bed_hosts < <("$hvd_root/scripts/cluster/up.sh" 2)
  trap '"$hvd_root/scripts/cluster/down.sh" >/dev/null' EXIT
  # Every implementation binds to the bed's link (eth0 in each host).
  where=(-H "${bed_hosts[0]}:2,${bed_hosts[1]}:2" -x HOROVOD_GLOO_IFACE=eth0)
  nps=4
  impls=("${impls[@]/torch/}")
  echo "bed: ${bed_hosts[*]}, 2 ranks each" >>"$dir/machine.txt"
fi

failed=0
# run_one IMPL NP: one hvdrun job; rank 0's JSON lines go to results.jsonl.
run_one() {
  local impl="$1" np="$2" cmd
  case "$impl" in
    gloo) cmd=("$gloo_bench") ;;
    # Gloo's default device in torch binds the address the machine's name
    # resolves to; lo puts it on loopback, where hvd and raw Gloo are.
    torch) cmd=(env GLOO_SOCKET_IFNAME=lo "$python"
                "$here/torch_allreduce_bench.py"
                --init-method "tcp://127.0.0.1:$(free_port)") ;;
    hvd) cmd=("$python" "$here/hvd_allreduce_bench.py") ;;
    hvd-flat) cmd=(env HOROVOD_HIERARCHICAL_ALLREDUCE=0 "$python"
                   "$here/hvd_allreduce_bench.py") ;;
  esac
  echo "== $impl np=$np" >>"$log"
  local hosts=(-np "$np")
  [ ${#where[@]} -gt 0 ] && hosts=("${where[@]}")
  if ! "$hvdrun" "${hosts[@]}" "${cmd[@]}" "${flags[@]}" 2>>"$log" |
      sed -n 's/^\[0\]<stdout>:\({.*\)$/\1/p' >>"$results"; then
    echo "warning: $impl at np=$np failed; see $log" >&2
    failed=1
  fi
}

for np in $nps; do
  if [ "$np" -gt "$cores" ]; then
    echo "note: np=$np runs $np ranks on $cores cores: oversubscribed," \
      "expect noisy numbers (compare columns, not runs)"
  fi
  for ((r = 1; r <= repeats; r++)); do
    "$python" "$here/memcpy_bench.py" >>"$results"
    for impl in "${impls[@]}"; do
      [ -n "$impl" ] || continue
      echo "np=$np repeat $r/$repeats: $impl"
      run_one "$impl" "$np"
    done
  done
done

"$python" "$here/report.py" "$results" | tee "$dir/report.md"
echo "results: $dir"
exit "$failed"
