#!/usr/bin/env bash
# Rendezvous benchmark: hvd's signed HTTP store against torch.distributed's
# TCPStore, side by side in one run. Each measurement alternates the two
# systems and is repeated; report.py prints the medians and ratios as the
# table in docs/benchmarks.md.
#
#   scripts/bench/rendezvous/run.sh [repeats]      (default 3)
# Environment: HVD_BENCH_SECONDS (per throughput run, default 3);
# HVD_BENCH_ONLY=watched runs only the 1024-worker round with and without a
# status poller (issue 14), `repeats` pairs. HVD_BENCH_ONLY=etcd (root)
# runs the round through a 3-member etcd on a test bed against the embedded
# server (issue 32), `repeats` pairs at 64 and 256 workers, and the Gloo
# full mesh of 64 ranks connected through each (kv_bench connect).
# HVD_BENCH_ONLY=keys: what workers' own keys cost (issue 33), `repeats`
# pairs of the 1024-worker round signed with the job secret and with each
# worker's key, and the server's check of one signature both ways.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../lib/common.sh"

"$hvd_root/scripts/setup.sh"
hvd_ensure_packages python3-torch

repeats="${1:-3}"
seconds="${HVD_BENCH_SECONDS:-3}"
hvd="$hvd_root/build/scripts/bench/rendezvous/hvd_kv_bench"
tcp=(/usr/bin/python3 "$here/tcpstore_bench.py")
out="$hvd_root/bench-results/rendezvous.jsonl"
mkdir -p "$(dirname "$out")"
: >"$out"

both() {  # both ARGS...: one hvd run and one TCPStore run with the same args
  HVD_LOG_LEVEL=error "$hvd" "$@" >>"$out"
  "${tcp[@]}" "$@" >>"$out"
}

watched_pair() {  # the 1024-worker round unwatched, then watched at 10/s
  HVD_LOG_LEVEL=error "$hvd" round 1024 >>"$out"
  HVD_LOG_LEVEL=error "$hvd" round 1024 10 >>"$out"
}

if [ "${HVD_BENCH_ONLY:-}" = etcd ]; then
  # Debian's etcd-server, three members in three bed hosts; the embedded
  # server runs in this process, in the root namespace.
  hvd_ensure_packages etcd-server etcd-client iproute2 openssh-server
  export HVD_BED_PREFIX=hvdb HVD_BED_NET=10.233.0
  trap '"$hvd_root/scripts/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
  "$hvd_root/scripts/cluster/up.sh" 3 >/dev/null
  eval "$("$hvd_root/scripts/cluster/etcd-up.sh")"
  for ((r = 0; r < repeats; r++)); do
    for workers in 64 256; do
      HVD_LOG_LEVEL=error "$hvd" round "$workers" >>"$out"
      HVD_LOG_LEVEL=error "$hvd" etcd-round "$workers" "$HVD_ETCD_ENDPOINTS" >>"$out"
    done
    HVD_LOG_LEVEL=error "$hvd" connect 64 >>"$out"
    HVD_LOG_LEVEL=error "$hvd" connect 64 "$HVD_ETCD_ENDPOINTS" >>"$out"
  done
  /usr/bin/python3 "$here/report.py" "$out"
  exit 0
fi

if [ "${HVD_BENCH_ONLY:-}" = keys ]; then
  for ((r = 0; r < repeats; r++)); do
    HVD_LOG_LEVEL=error "$hvd" round 1024 >>"$out"
    HVD_LOG_LEVEL=error "$hvd" worker-key-round 1024 >>"$out"
    HVD_LOG_LEVEL=error "$hvd" verify 200000 >>"$out"
  done
  /usr/bin/python3 "$here/report.py" "$out"
  exit 0
fi

if [ "${HVD_BENCH_ONLY:-}" = watched ]; then
  for ((r = 0; r < repeats; r++)); do watched_pair; done
  /usr/bin/python3 "$here/report.py" "$out"
  exit 0
fi

for ((r = 0; r < repeats; r++)); do
  for clients in 1 8 32; do
    both get "$clients" "$seconds"
  done
  for clients in 8 32; do
    both set "$clients" "$seconds"
  done
  both barrier 64 50
  for workers in 64 256; do
    both round "$workers"
  done
  # TCPStore's round at 1024 workers needs about a million gets; hvd only,
  # unwatched and watched by a status poller.
  watched_pair
done

/usr/bin/python3 "$here/report.py" "$out"
