#!/usr/bin/env bash
# Takeover benchmark (issue 32): the leading hvdrun's host crashes while a
# --standby waits on another; 8 workers on 4 bed hosts keep training. Each
# repeat appends a line to results.jsonl (takeover.py); report.md gives the
# medians. Needs root (the test bed's namespaces, sshd) and the bed's etcd.
#
#   scripts/bench/takeover/run.sh [repeats]      (default 3)
#
# Results: bench-results/takeover/<timestamp>/{results.jsonl,report.md,
# machine.txt,takeover-r<N>/...} (the workers' logs, both hvdruns' stderr).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../lib/common.sh"
[ "$(id -u)" -eq 0 ] || hvd_die "the test bed needs root: run 'sudo $0 $*'"
"$hvd_root/scripts/setup.sh" --with-tests
repeats="${1:-3}"
dir="$hvd_root/bench-results/takeover/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$dir"
results="$dir/results.jsonl"
: >"$results"
{
  echo "date: $(date -Is)"
  echo "commit: $(git -C "$hvd_root" rev-parse --short HEAD || echo unknown)"
  echo "cores: $(nproc)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$dir/machine.txt"
export HVD_BED_PREFIX="${HVD_BENCH_BED_PREFIX:-tkb}"
export HVD_BED_NET="${HVD_BENCH_BED_NET:-10.232.0}"
export HVD_BENCH_BED_PREFIX="$HVD_BED_PREFIX" HVD_BENCH_BED_NET="$HVD_BED_NET"
cleanup() {
  "$hvd_root/scripts/cluster/etcd-down.sh" >/dev/null 2>&1 || true
  "$hvd_root/scripts/cluster/down.sh" >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$hvd_root/scripts/cluster/up.sh" 7 >/dev/null
endpoints="$("$hvd_root/scripts/cluster/etcd-up.sh")"
export HVD_ETCD_ENDPOINTS="${endpoints#export HVD_ETCD_ENDPOINTS=}"
mapfile -t hosts < <("$hvd_root/scripts/cluster/ctl.sh" hosts)
export HVD_BENCH_WORKER_HOSTS="${hosts[*]:3:4}"
for r in $(seq 1 "$repeats"); do
  python3 "$here/takeover.py" "$dir" "$results" "$r"
done
python3 - "$results" >"$dir/report.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k: statistics.median(r[k] for r in rows)
print(f"| repeats | adopted after crash (s) | longest step gap around the "
      f"crash (s) | median step (s) | resets | exact |")
print("|---|---|---|---|---|---|")
print(f"| {len(rows)} | {med('adopted_after_s'):.2f} "
      f"(max {max(r['adopted_after_s'] for r in rows):.2f}) | "
      f"{med('longest_step_gap_around_crash_s'):.3f} "
      f"(max {max(r['longest_step_gap_around_crash_s'] for r in rows):.3f}) | "
      f"{med('median_step_s'):.3f} | {sum(r['resets'] for r in rows)} | "
      f"{all(r['exact'] and r['exit_code'] == 0 for r in rows)} |")
PY
cat "$dir/report.md"
echo "results: $dir"
