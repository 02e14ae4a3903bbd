#!/usr/bin/env bash
# Fusion benchmark (issue 5, performance machinery): what a training step's
# gradient set costs hvd against torch.distributed (backend gloo) and raw
# Gloo, at 2 and 4 ranks on this machine. Workloads (HVD_BENCH_ONLY):
#   resnet50     ResNet-50's 161 gradients (97.5 MiB float32) summed every
#                step: hvd (allreduce_async_ each, then synchronize all),
#                hvd-grouped (grouped_allreduce; skipped where hvd has none),
#                hvd-views (as hvd, the tensors views of one flat buffer, as
#                DistributedOptimizer lays gradients out), hvd-views-flat
#                (hvd-views without the shared-memory stage,
#                HOROVOD_HIERARCHICAL_ALLREDUCE=0),
#                torch (one async all_reduce per tensor), torch-buckets
#                (DDP's buckets: 1 MiB, then 25 MiB, reverse order) and gloo
#                (raw Gloo, one flat buffer of the same size).
#   negotiation  100 tensors of 4 float32 per step: hvd with its response
#                cache (default) and without (hvdrun --cache-capacity 0).
#   autotune     resnet50 for hvd with HOROVOD_AUTOTUNE=1, long enough for
#                the tuner to finish; its last steps are reported, and its
#                log (HOROVOD_AUTOTUNE_LOG) lands in the results folder.
# Every repeat runs each implementation once, interleaved, so that they see
# the same machine state; report.py prints the median step times and ratios.
#
#   scripts/bench/fusion/run.sh [repeats]      (default 3)
# Environment: HVD_BENCH_NP (default "2 4"), HVD_BENCH_ONLY (a subset of
# "resnet50 negotiation autotune"), HVD_BENCH_STEPS (timed resnet50 steps
# per run, default 20), HVD_BENCH_TINY_STEPS (1000), HVD_BENCH_AUTOTUNE_STEPS
# (steps of an autotune run, default 300; the tuner needs about warm-up +
# samples x steps per sample of them, HOROVOD_AUTOTUNE_* set them),
# HVD_BENCH_AUTOTUNE_TAIL (its last steps reported, default 30),
# HVD_BENCH_IMPLS (keeps only the resnet50 implementations it names),
# HVD_PYTHON (default /usr/bin/python3; a Python of your own, with its own
# torch and numpy, as on the GPU machine: scripts/gpu/device-check.sh),
# HVD_BUILD_DIR (default build/, which scripts/setup.sh builds first; any
# other build folder is used as it is, with hvdrun, _hvd_core and
# hvd_gloo_allreduce_bench built). Tuning variables a shell may carry
# (HOROVOD_CACHE_CAPACITY, _FUSION_THRESHOLD, _CYCLE_TIME, _AUTOTUNE) are
# cleared: every run but the one named for it uses hvd's defaults.
# Results: bench-results/fusion/<timestamp>/{results.jsonl,report.md,...}
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../lib/common.sh"

# Other jobs on the machine move these numbers more than anything measured;
# read before our own build adds to it.
load="$(cut -d' ' -f1 /proc/loadavg)"
source "$here/../bench_env.sh"

repeats="${1:-3}"
nps="${HVD_BENCH_NP:-2 4}"
only="${HVD_BENCH_ONLY:-resnet50 negotiation autotune}"
steps="${HVD_BENCH_STEPS:-20}"
tiny_steps="${HVD_BENCH_TINY_STEPS:-1000}"
autotune_steps="${HVD_BENCH_AUTOTUNE_STEPS:-300}"
autotune_tail="${HVD_BENCH_AUTOTUNE_TAIL:-30}"
unset HOROVOD_CACHE_CAPACITY HOROVOD_FUSION_THRESHOLD HOROVOD_CYCLE_TIME \
  HOROVOD_AUTOTUNE HOROVOD_AUTOTUNE_LOG

hvdrun="$build/launcher/hvdrun"
gloo_bench="$build/scripts/bench/allreduce/hvd_gloo_allreduce_bench"
resnet50_bytes="$(cd "$here" &&
  "$python" -c 'import resnet50_shapes as r; print(4 * r.PARAMETERS)')"
dir="$hvd_root/bench-results/fusion/$(date +%Y%m%d-%H%M%S)"
results="$dir/results.jsonl"
log="$dir/workers.log"
mkdir -p "$dir"
: >"$results"

"$python" -c 'import hvd' || hvd_die "'import hvd' fails with $build"
resnet50_impls=(gloo torch torch-buckets hvd hvd-views hvd-views-flat)
if "$python" -c 'import sys, hvd
sys.exit(not hasattr(hvd, "grouped_allreduce"))'; then
  resnet50_impls+=(hvd-grouped)
else
  echo "note: this hvd has no grouped_allreduce; hvd-grouped is skipped" |
    tee "$dir/notes.txt"
fi
bench_keep_impls resnet50_impls

{
  echo "date: $(date -Is)"
  echo "commit: $(git -C "$hvd_root" rev-parse --short HEAD || echo unknown)"
  echo "build: $build"
  echo "cores: $cores; OMP_NUM_THREADS: $OMP_NUM_THREADS"
  echo "kernel: $(uname -r)"
  echo "torch: $("$python" -c 'import torch; print(torch.__version__)')"
  echo "load average at the start: $load"
  echo "repeats: $repeats; np: $nps; workloads: $only"
  echo "steps: resnet50 $steps, negotiation $tiny_steps," \
    "autotune $autotune_steps (last $autotune_tail reported)"
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

failed=0
# run_one WORKLOAD IMPL NP REPEAT: one hvdrun job; rank 0's JSON line goes
# to results.jsonl (raw Gloo's tagged with its workload).
run_one() {
  local workload="$1" impl="$2" np="$3" r="$4" env=() flags=() cmd
  local hvd_bench=("$python" "$here/hvd_fusion_bench.py" --label "$impl")
  local tag=''
  case "$workload/$impl" in
    resnet50/gloo)
      cmd=("$gloo_bench" --sizes "$resnet50_bytes" --steps "$steps")
      tag='"workload": "resnet50", ' ;;
    # Gloo's default device in torch binds the address the machine's name
    # resolves to; lo puts it on loopback, where hvd and raw Gloo are.
    resnet50/torch | resnet50/torch-buckets)
      local variant=per-tensor
      [ "$impl" = torch-buckets ] && variant=buckets
      cmd=(env GLOO_SOCKET_IFNAME=lo "$python" "$here/torch_fusion_bench.py"
           --init-method "tcp://127.0.0.1:$(free_port)" --label "$impl"
           --variant "$variant" --steps "$steps") ;;
    resnet50/hvd) cmd=("${hvd_bench[@]}" --steps "$steps") ;;
    resnet50/hvd-views)
      cmd=("${hvd_bench[@]}" --variant views --steps "$steps") ;;
    resnet50/hvd-views-flat)
      env=(HOROVOD_HIERARCHICAL_ALLREDUCE=0)
      cmd=("${hvd_bench[@]}" --variant views --steps "$steps") ;;
    resnet50/hvd-grouped)
      cmd=("${hvd_bench[@]}" --variant grouped --steps "$steps") ;;
    negotiation/hvd*)
      [ "$impl" = hvd-cache-off ] && flags=(--cache-capacity 0)
      cmd=("${hvd_bench[@]}" --workload tiny --steps "$tiny_steps") ;;
    autotune/hvd-autotune)
      env=(HOROVOD_AUTOTUNE=1
           HOROVOD_AUTOTUNE_LOG="$dir/autotune-np$np-r$r.csv")
      cmd=("${hvd_bench[@]}" --steps "$autotune_steps"
           --tail "$autotune_tail") ;;
  esac
  echo "== $workload $impl np=$np repeat=$r" >>"$log"
  if ! env "${env[@]}" "$hvdrun" -np "$np" "${flags[@]}" "${cmd[@]}" \
      2>>"$log" | sed -n "s/^\[0\]<stdout>:{\(.*\)$/{$tag\1/p" >>"$results"
  then
    echo "warning: $workload $impl at np=$np failed; see $log" >&2
    failed=1
  fi
}

impls_of() {
  case "$1" in
    resnet50) echo "${resnet50_impls[@]}" ;;
    negotiation) echo hvd hvd-cache-off ;;
    autotune) echo hvd-autotune ;;
    *) hvd_die "unknown workload '$1' in HVD_BENCH_ONLY" ;;
  esac
}

for np in $nps; do
  if [ "$np" -gt "$cores" ]; then
    echo "note: np=$np runs $np ranks on $cores cores: oversubscribed," \
      "expect noisy numbers (compare columns, not runs)"
  fi
  for ((r = 1; r <= repeats; r++)); do
    for workload in $only; do
      for impl in $(impls_of "$workload"); do
        echo "np=$np repeat $r/$repeats: $workload $impl"
        run_one "$workload" "$impl" "$np" "$r"
      done
    done
  done
done

"$python" "$here/report.py" "$results" | tee "$dir/report.md"
echo "results: $dir"
exit "$failed"
