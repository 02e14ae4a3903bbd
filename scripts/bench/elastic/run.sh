#!/usr/bin/env bash
# Elastic benchmark: recovery after kill -9 (one worker; a whole host),
# scale-up (a host joins: time to the new worker's step, pause of the
# running workers), re-rendezvous in the same processes (hvd vs
# torch.distributed), commit overhead (ObjectState, TorchState), and
# torchrun's recovery for comparison, at 2, 4 and 8 workers on this
# machine. Every repeat runs every scenario once, interleaved, so that all
# see the same machine state; report.py prints medians and spreads.
# "bed" (not in the default set; needs root) runs bed_scenario.py: a host
# lost across real ssh on the test bed (scripts/cluster/), by kill, crash
# and partition, hvd and torchrun interleaved, at 4 and 8 workers.
# "etcd" (not in the default set) runs the worker recovery with the
# rendezvous in etcd against the embedded store, interleaved (issue 32):
# one etcd member (Debian's etcd-server) on loopback, data under the
# results folder, stopped by its pid at the end.
# "slurm" (not in the default set; needs root) runs slurm_scenario.py: 6
# workers on 3 Slurm nodes of the bed lose one to a crash and grow by a
# companion job, against the same over ssh.
#
#   scripts/bench/elastic/run.sh [repeats]      (default 3)
#   HVD_BENCH_ONLY=bed scripts/bench/elastic/run.sh [repeats]
#   HVD_BENCH_ONLY=slurm scripts/bench/elastic/run.sh [repeats]
# Environment: HVD_BENCH_NP (default "2 4 8"; "4 8" for bed alone),
# HVD_BENCH_ONLY (a subset of "recovery host scaleup rerendezvous commit
# torchrun bed slurm etcd"), HVD_BENCH_ROUNDS (re-rendezvous rounds per run, default
# 10).
# Results: bench-results/elastic/<timestamp>/{results.jsonl,report.md,
# machine.txt, <scenario>-<variant>-np<N>-r<repeat>/...} (each scenario's
# folder keeps the workers' JSON logs and hvdrun's timestamped stderr).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../lib/common.sh"

load="$(cut -d' ' -f1 /proc/loadavg)"
"$hvd_root/scripts/setup.sh"
hvd_ensure_packages python3-torch python3-numpy

repeats="${1:-3}"
only="${HVD_BENCH_ONLY:-recovery host scaleup rerendezvous commit torchrun}"
if [ "$only" = bed ]; then
  nps="${HVD_BENCH_NP:-4 8}"
elif [ "$only" = slurm ]; then
  nps=6  # the scenario's own: 6 workers on 3 nodes
else
  nps="${HVD_BENCH_NP:-2 4 8}"
fi
if [[ " $only " == *" bed "* || " $only " == *" slurm "* ]]; then
  [ "$(id -u)" -eq 0 ] ||
    hvd_die "the bed and slurm scenarios need root (network namespaces, sshd, Slurm's daemons): run 'sudo HVD_BENCH_ONLY=$only $0 $*'"
fi
rounds="${HVD_BENCH_ROUNDS:-10}"
dir="$hvd_root/bench-results/elastic/$(date +%Y%m%d-%H%M%S)"
results="$dir/results.jsonl"
mkdir -p "$dir"
: >"$results"

{
  echo "date: $(date -Is)"
  echo "commit: $(git -C "$hvd_root" rev-parse --short HEAD || echo unknown)"
  echo "cores: $(nproc)"
  echo "kernel: $(uname -r)"
  echo "torch: $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
  echo "load average before the build: $load"
  echo "repeats: $repeats; np: $nps; benches: $only; rounds: $rounds"
} >"$dir/machine.txt"
if awk -v l="$load" -v c="$(nproc)" 'BEGIN { exit !(l > c / 2) }'; then
  echo "note: load average is $load on $(nproc) cores;" \
    "other work will skew the results"
fi

wanted() { [[ " $only " == *" $1 "* ]]; }
failed=0
etcd_endpoint=
if wanted etcd; then
  hvd_ensure_packages etcd-server etcd-client
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  peer=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  etcd --name bench --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$port" \
    --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "bench=http://127.0.0.1:$peer" >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  trap 'kill "$etcd_pid" 2>/dev/null || true' EXIT
  etcd_endpoint="127.0.0.1:$port"
  for ((i = 0; i < 100; i++)); do
    ETCDCTL_API=3 etcdctl --endpoints "$etcd_endpoint" --dial-timeout 1s \
      endpoint health >/dev/null 2>&1 && break
    kill -0 "$etcd_pid" 2>/dev/null || hvd_die "etcd did not start: $dir/etcd.log"
    sleep 0.1  # polling etcd's health, 10 s at most
  done
  ETCDCTL_API=3 etcdctl --endpoints "$etcd_endpoint" --dial-timeout 1s \
    endpoint health >/dev/null 2>&1 || hvd_die "etcd is not healthy: $dir/etcd.log"
  echo "etcd member at $etcd_endpoint (pid $etcd_pid)" | tee -a "$dir/machine.txt"
fi
# scenario ARGS...: one run; its JSON line goes to results.jsonl.
scenario() {
  echo "repeat $r/$repeats np=$np: $*"
  if ! /usr/bin/python3 "$here/scenario.py" "$dir" "$results" "$@" \
      --np "$np" --repeat "$r" >>"$dir/scenarios.log" 2>&1; then
    echo "warning: $* at np=$np failed; see $dir/scenarios.log" >&2
    failed=1
  fi
}

# bed ARGS...: one bed_scenario.py run (it brings a bed up and down).
bed() {
  echo "repeat $r/$repeats np=$np: bed $*"
  if ! /usr/bin/python3 "$here/bed_scenario.py" "$dir" "$results" "$@" \
      --np "$np" --repeat "$r" >>"$dir/scenarios.log" 2>&1; then
    echo "warning: bed $* at np=$np failed; see $dir/scenarios.log" >&2
    failed=1
  fi
}

started=$SECONDS
for ((r = 1; r <= repeats; r++)); do
  for np in $nps; do
    wanted recovery && scenario recovery --variant worker
    if wanted etcd; then
      scenario recovery --variant worker
      scenario recovery --variant worker --etcd "$etcd_endpoint"
    fi
    if wanted host && [ "$np" -ge 4 ]; then
      scenario recovery --variant host
    fi
    wanted scaleup && scenario scaleup
    if wanted rerendezvous; then
      for impl in hvd torch-prefix torch-tcp; do
        scenario rerendezvous --impl "$impl" --rounds "$rounds"
      done
    fi
    if wanted commit; then
      scenario commit --state object
      scenario commit --state torch
    fi
    if wanted torchrun; then
      # torchrun's default monitor interval (5 s), then a tight one.
      scenario torchrun --monitor-interval 5
      scenario torchrun --monitor-interval 0.1
    fi
    if wanted slurm; then
      for event in crash partition; do
        for impl in slurm ssh; do
          echo "repeat $r/$repeats: slurm $impl $event"
          if ! /usr/bin/python3 "$here/slurm_scenario.py" "$dir" "$results" \
              "$impl" --event "$event" --repeat "$r" >>"$dir/scenarios.log" 2>&1; then
            echo "warning: slurm $impl $event failed; see $dir/scenarios.log" >&2
            failed=1
          fi
        done
      done
    fi
    if wanted bed && [ "$np" -ge 4 ]; then
      for event in kill crash partition; do
        bed hvd --event "$event"
        bed torchrun --event "$event"
      done
    fi
  done
done
echo "scenarios took $((SECONDS - started)) s" | tee -a "$dir/machine.txt"

/usr/bin/python3 "$here/report.py" "$results" | tee "$dir/report.md"
echo "results: $dir"
exit "$failed"
