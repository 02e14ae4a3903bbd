#!/usr/bin/env bash
# The elastic demo: trains examples/torch_elastic_train.py on this machine
# while hosts come and go. Hosts are local addresses (localhost, 127.0.0.2,
# 127.0.0.3), each a separate "host" to hvdrun. The discovery script prints
# a file this script rewrites:
#   start      localhost:2                      2 workers
#   then       + 127.0.0.2:2                    4 workers (warm join)
#   then       kill -9 one worker on 127.0.0.2  its host is blacklisted: 2
#   then       + 127.0.0.3:2                    4 workers
#   then       - localhost (rank 0's host)      2 workers on 127.0.0.3
# and prints what happened: generations, sizes, recovery time.
#
# scripts/demo.sh --cluster (as root): the same job on a test bed of hosts
# with their own sshd (scripts/cluster/, bed "demo" on 10.231.0.0/24),
# workers started over real ssh: scripts/lib/demo_cluster.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

case "${1:-}" in
  "") ;;
  --cluster)
    source "$hvd_root/scripts/lib/demo_cluster.sh"
    cluster_demo
    exit
    ;;
  *) hvd_die "usage: $0 [--cluster]" ;;
esac

demo_started=$(date +%s.%N)
"$hvd_root/scripts/setup.sh"
cat "$hvd_root/build/setup.times"

work="$(mktemp -d)"
trap 'kill -- -$$ 2>/dev/null || true; rm -rf "$work"' INT TERM
hosts="$work/hosts"
printf '#!/bin/sh\ncat %s\n' "$hosts" >"$work/discover.sh"
chmod +x "$work/discover.sh"
log="$work/hvdrun.log"
start=$(date +%s.%N)

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { printf '[demo %5ss] %s\n' "$(elapsed "$start")" "$*"; }
wait_for() {  # wait_for PATTERN SECONDS [COUNT]: until the output has it
  local deadline=$((SECONDS + $2)) count="${3:-1}"
  until [ "$(grep -c -- "$1" "$log" 2>/dev/null)" -ge "$count" ]; do
    [ $SECONDS -lt $deadline ] || hvd_die "the demo waited $2 s for '$1' (log: $log)"
    kill -0 "$job" 2>/dev/null || hvd_die "hvdrun ended early (log: $log)"
    sleep 0.1
  done
}
worker_pid_on() {  # the pid of a live training worker on host $1
  # hvdrun --verbose logs each slot's pid: the worker's guard, whose child
  # is the worker. Newest first; a guard that is gone prints nothing.
  local guard worker
  for guard in $(sed -n -E "s/.*hvdrun: slot ${1//./\\.}:[0-9]+ \(rank [0-9]+\) is pid ([0-9]+)$/\1/p" "$log" | tac); do
    worker="$(cat "/proc/$guard/task/$guard/children" 2>/dev/null || true)"
    worker="${worker%% *}"
    if [ -n "$worker" ]; then
      echo "$worker"
      return
    fi
  done
}

printf 'localhost:2\n' >"$hosts"
say "starting: hvdrun -np 2 --min-np 1 --host-discovery-script (hosts: localhost:2)"
"$hvd_root/build/launcher/hvdrun" --verbose -np 2 --min-np 1 --max-np 8 \
  --host-discovery-script "$work/discover.sh" --discovery-interval 0.5 \
  /usr/bin/python3 "$hvd_root/examples/torch_elastic_train.py" \
  --epochs 14 --step-delay 0.04 >"$log" 2>&1 &
job=$!
# Show the story as it happens: generations, resets, epochs, exits.
# Workers' lines carry the rank they started as; the script prints from
# whichever worker is rank 0 now.
tail -n +1 -f "$log" --pid "$job" 2>/dev/null |
  grep --line-buffered -E '^((\[[0-9: .-]+\] )?hvdrun: (status page|generation|slot|every|.*failed)|\[[0-9]+\]<stdout>:|\[[0-9]+\]<stderr>:hvd: )' |
  sed -u -E 's/^\[[0-9]+\]<stdout>:/  training: /; s/^\[[0-9]+\]<stderr>:hvd: /  worker: /; s/^(\[[0-9: .-]+\] )?hvdrun: /  hvdrun: /' &
follow=$!

wait_for 'epoch 0:' 120
say "adding host 127.0.0.2 with 2 slots"
printf 'localhost:2\n127.0.0.2:2\n' >"$hosts"
wait_for 'continuing with 4 workers' 120

sleep 3
victim="$(worker_pid_on 127.0.0.2)"
[ -n "$victim" ] || hvd_die "no worker found on 127.0.0.2"
say "kill -9 of worker pid $victim on host 127.0.0.2"
kill -9 "$victim"
killed=$(date +%s.%N)
wait_for 'continuing with 2 workers' 60
recovery="$(elapsed "$killed")"

sleep 2
say "adding host 127.0.0.3 with 2 slots"
printf 'localhost:2\n127.0.0.3:2\n' >"$hosts"
wait_for 'generation 4 ' 60
wait_for 'continuing with 4 workers' 60 2

sleep 3
say "removing host localhost (where rank 0 runs)"
printf '127.0.0.3:2\n' >"$hosts"

# The job ends by itself once training finishes; bound the wait anyway.
wait_for 'job succeeded\|job failed' 300
set +e
wait "$job"
code=$?
# tail follows the log until hvdrun is gone (checked each second): its last
# lines are out once the pipeline ends.
wait "$follow"
set -e
echo
echo "What happened:"
grep -E '^(\[[0-9: .-]+\] )?hvdrun: generation' "$log" | sed -E 's/^(\[[0-9: .-]+\] )?hvdrun: /  /'
echo "  recovery after the kill (kill -> rank 0 training again with 2 workers," \
  "as this script saw it): $recovery s"
if [ "$code" -eq 0 ] && grep -q 'training finished' "$log"; then
  echo "  training finished; hvdrun exit code 0"
else
  echo "  hvdrun exit code $code (log: $log)"
  exit 1
fi
echo "  the demo, setup included: $(elapsed "$demo_started") s"
rm -rf "$work"
