#!/usr/bin/env bash
# Takeover benchmark (issue 32): the leading hvdrun's host crashes while a
# --standby waits on another; 8 workers on 4 bed hosts keep training
# (apart), or the leader's host is one of the four and its 2 workers die
# with it (beside). Each repeat appends a line to results.jsonl
# (takeover.py); report.md gives the medians. Needs root (the test bed's
# namespaces, sshd) and the bed's etcd. With beside, each repeat also runs
# the anchor: torchrun's agents on 4 hosts meeting in a 3-member etcd
# (torch's etcd rendezvous), the first host crashed, on a bed of its own
# (scripts/bench/elastic/bed_scenario.py ... --rdzv etcd --lose first).
#
#   scripts/bench/takeover/run.sh [repeats] [apart|beside]   (3, apart)
#
# Results: bench-results/takeover/<timestamp>/{results.jsonl,report.md,
# machine.txt,takeover-r<N>/...} (the workers' logs, both hvdruns' stderr).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../lib/common.sh"
[ "$(id -u)" -eq 0 ] || hvd_die "the test bed needs root: run 'sudo $0 $*'"
"$hvd_root/scripts/setup.sh" --with-tests
repeats="${1:-3}"
scenario="${2:-apart}"
case "$scenario" in apart | beside) ;; *) hvd_die "scenario: apart or beside" ;; esac
[ "$scenario" = apart ] || hvd_ensure_packages python3-torch python3-etcd
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
  python3 "$here/takeover.py" "$dir" "$results" "$r" "$scenario"
  if [ "$scenario" = beside ]; then
    HVD_BENCH_BED_PREFIX=tka HVD_BENCH_BED_NET=10.233.0 \
      python3 "$hvd_root/scripts/bench/elastic/bed_scenario.py" "$dir" \
      "$dir/anchor.jsonl" torchrun --np 8 --event crash --rdzv etcd \
      --lose first --repeat "$r" ||
      echo "warning: the anchor's repeat $r failed (see $dir/anchor.jsonl)" >&2
  fi
done
python3 - "$results" "$dir/anchor.jsonl" >"$dir/report.md" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k: statistics.median(r[k] for r in rows)
top = lambda k: max(r[k] for r in rows)
exact = all(r['exact'] and r['exit_code'] == 0 for r in rows)
if rows[0]["scenario"] == "beside":
    print("| repeats | adopted after crash (s) | survivors stepping after "
          "crash (s) | median step (s) | resets | exact |")
    print("|---|---|---|---|---|---|")
    print(f"| {len(rows)} | {med('adopted_after_s'):.2f} "
          f"(max {top('adopted_after_s'):.2f}) | "
          f"{med('survivors_stepping_after_s'):.2f} "
          f"(max {top('survivors_stepping_after_s'):.2f}) | "
          f"{med('median_step_s'):.3f} | "
          f"{'/'.join(str(r['resets']) for r in rows)} | {exact} |")
    anchor = [json.loads(l) for l in open(sys.argv[2])] \
        if os.path.exists(sys.argv[2]) else []
    done = [r["recovery_s"] for r in anchor if "recovery_s" in r]
    print()
    print("| anchor | runs | recovered | survivors stepping after crash "
          "(s) | torchrun / hvd |")
    print("|---|---|---|---|---|")
    if done:
        ratio = statistics.median(done) / med('survivors_stepping_after_s')
        print(f"| torchrun, etcd rendezvous | {len(anchor)} | {len(done)} | "
              f"{statistics.median(done):.2f} ({min(done):.2f}-"
              f"{max(done):.2f}) | {ratio:.1f} |")
    else:
        print(f"| torchrun, etcd rendezvous | {len(anchor)} | 0 | - | - |")
    sys.exit()
print(f"| repeats | adopted after crash (s) | longest step gap around the "
      f"crash (s) | median step (s) | resets | exact |")
print("|---|---|---|---|---|---|")
print(f"| {len(rows)} | {med('adopted_after_s'):.2f} "
      f"(max {top('adopted_after_s'):.2f}) | "
      f"{med('longest_step_gap_around_crash_s'):.3f} "
      f"(max {top('longest_step_gap_around_crash_s'):.3f}) | "
      f"{med('median_step_s'):.3f} | {sum(r['resets'] for r in rows)} | "
      f"{exact} |")
PY
cat "$dir/report.md"
echo "results: $dir"
