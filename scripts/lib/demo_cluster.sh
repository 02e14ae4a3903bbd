# scripts/demo.sh --cluster: the elastic demo on a test bed (scripts/cluster/)
# of hosts demo1, demo2, ... (network namespaces on the bridge br-demo,
# 10.231.0.0/24, each with its own sshd). hvdrun runs here, in the root
# namespace, and starts every worker over ssh under its remote guard. The
# discovery script prints a file this script rewrites; the story:
#   start      demo1:2 demo2:2                  4 workers
#   join       + demo3:2                        6
#   kill -9    one worker on demo3              4 (demo3 blacklisted)
#   join       + demo4:2                        6
#   crash      demo2 (ctl.sh crash)             4 (demo2 is gone)
#   join       + demo5:2 (ctl.sh add)           6
#   partition  demo5 (ctl.sh partition)         4; its workers stop
#              themselves; heal: demo5 stays blacklisted
#   leave      rank 0's host (demo1) removed    2 on demo4, to the end
# Recovery = from the event (this script's clock as it acts) to the last
# survivor's first step in the new world, as the workers stamp it
# (examples/torch_elastic_train.py --trace-steps prints each rank's first
# step after every start and reset, with its pid, host and time.time();
# the hosts share this machine's clock). Source it; do not run it.

cluster_demo() {
  [ "$(id -u)" -eq 0 ] ||
    hvd_die "the cluster demo needs root (network namespaces, sshd): run 'sudo $0 --cluster'"
  export HVD_BED_PREFIX=demo HVD_BED_NET=10.231.0
  cluster="$hvd_root/scripts/cluster"
  "$hvd_root/scripts/setup.sh"
  source "$hvd_root/scripts/lib/packages.sh"
  hvd_ensure_packages "${hvd_bed_packages[@]}"

  work="$(mktemp -d)"
  log="$work/hvdrun.log"
  hosts="$work/hosts"
  job="" follow=""
  trap cluster_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  printf '#!/bin/sh\ncat %s\n' "$hosts" >"$work/discover.sh"
  chmod +x "$work/discover.sh"
  start=$(date +%s.%N)
  results=()

  say "bringing up the test bed: 4 hosts (scripts/cluster/up.sh 4, bed 'demo')"
  "$cluster/up.sh" 4 >/dev/null

  set_hosts demo1:2 demo2:2 >/dev/null
  say "starting: hvdrun -np 4 --min-np 2 --host-discovery-script (hosts: demo1:2 demo2:2)"
  local t0
  t0=$(date +%s.%N)
  : >"$log"  # before tail follows it
  "$hvd_root/build/launcher/hvdrun" --verbose -np 4 --min-np 2 --max-np 8 \
    --host-discovery-script "$work/discover.sh" --discovery-interval 0.5 \
    /usr/bin/python3 "$hvd_root/examples/torch_elastic_train.py" \
    --epochs 24 --step-delay 0.04 --trace-steps >"$log" 2>&1 &
  job=$!
  # The story as it happens: generations, failures, resets, epochs. The
  # first-step lines are summed up per event instead.
  tail -n +1 -f "$log" --pid "$job" 2>/dev/null |
    grep --line-buffered -E '^((\[[0-9: .-]+\] )?hvdrun: (status page|generation|every|.*failed|.*blacklisted)|\[[0-9]+\]<stdout>:(epoch|reset|training)|\[[0-9]+\]<stderr>:hvd: )' |
    sed -u -E 's/^\[[0-9]+\]<stdout>:/  training: /; s/^\[[0-9]+\]<stderr>:hvd: /  worker: /; s/^(\[[0-9: .-]+\] )?hvdrun: /  hvdrun: /' &
  follow=$!
  world 4 "$t0" 120 "start on demo1, demo2" >/dev/null
  say "4 workers training: $(placement 4 "$t0")"

  settle
  local t
  t=$(set_hosts demo1:2 demo2:2 demo3:2)
  say "join: demo3 added to discovery"
  recovered "join of demo3 (discovery → its workers' first step)" "$t" 6 60

  settle
  local victim
  victim="$(worker_on demo3 6 "$t")" || exit 1
  say "kill -9 of worker pid $victim on demo3 (its pid as it printed it, found in demo3's namespace)"
  t=$(date +%s.%N)
  kill -9 "$victim"
  recovered "kill -9 of a worker on demo3" "$t" 4 60

  settle
  t=$(set_hosts demo1:2 demo2:2 demo3:2 demo4:2)
  say "join: demo4 added to discovery (demo3 is blacklisted: it stays out)"
  recovered "join of demo4" "$t" 6 60

  settle
  say "crash of demo2 (scripts/cluster/ctl.sh crash: every process there killed)"
  t=$(date +%s.%N)
  "$cluster/ctl.sh" crash demo2
  recovered "crash of demo2" "$t" 4 60

  settle
  local added
  added="$("$cluster/ctl.sh" add)"
  t=$(set_hosts demo1:2 demo2:2 demo3:2 demo4:2 "$added:2")
  say "join: $added (ctl.sh add) added to discovery"
  recovered "join of $added" "$t" 6 60

  settle
  local doomed
  doomed="$(pids_on "$added" 6 "$t")" || exit 1
  say "partition of $added (ctl.sh partition: its link down; workers ${doomed//$'\n'/, })"
  t=$(date +%s.%N)
  "$cluster/ctl.sh" partition "$added"
  recovered "partition of $added" "$t" 4 60
  gone "$doomed" "$t" 30 "$added"
  "$cluster/ctl.sh" heal "$added"
  say "healed $added: it stays blacklisted, so it does not come back"

  settle
  local first
  first="$(rank0_host 4 "$t")"
  [ -n "$first" ] || hvd_die "no rank 0 found in the world of 4 (log: $log)"
  t=$(set_hosts $(sed "/^$first:/d" "$hosts"))
  say "leave: $first (where rank 0 runs) removed from discovery"
  recovered "rank 0's host $first leaves" "$t" 2 60

  # The job ends by itself once training finishes; bound the wait anyway.
  wait_log 'job succeeded\|job failed' 300
  set +e
  wait "$job"
  local code=$?
  job=""
  wait "$follow"
  set -e
  echo
  echo "What happened:"
  grep -E '^(\[[0-9: .-]+\] )?hvdrun: generation' "$log" | sed -E 's/^(\[[0-9: .-]+\] )?hvdrun: /  /'
  echo "Recovery, from the event to the last survivor's first step in the new world:"
  printf '  %s\n' "${results[@]}"
  if [ "$code" -eq 0 ] && grep -q 'training finished' "$log"; then
    echo "  training finished; hvdrun exit code 0"
  else
    echo "  hvdrun exit code $code (log: $log)"
    exit 1
  fi
}

# Stops hvdrun (its remote guards stop the workers), removes the bed; keeps
# the logs when the demo failed.
cluster_cleanup() {
  local code=$?
  set +e
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then
    kill -TERM "$job"
    local deadline=$((SECONDS + 15))
    while kill -0 "$job" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
      sleep 0.1
    done
    kill -KILL "$job" 2>/dev/null
  fi
  [ -n "$follow" ] && kill "$follow" 2>/dev/null
  if ! "$cluster/down.sh" >/dev/null; then
    echo "warning: the bed is not removed: run" \
      "'HVD_BED_PREFIX=demo HVD_BED_NET=10.231.0 $cluster/down.sh'" >&2
  fi
  if [ "$code" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "the test bed is removed; the demo's files are kept in $work" >&2
  fi
}

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { printf '[demo %5ss] %s\n' "$(elapsed "$start")" "$*"; }
settle() { sleep 2; }  # a few steps of steady training between events

# set_hosts HOST:SLOTS...: the discovery file, replaced in one rename (the
# script never reads half of it); prints the time of the change.
set_hosts() {
  printf '%s\n' "$@" >"$hosts.new"
  mv "$hosts.new" "$hosts"
  date +%s.%N
}

# wait_log PATTERN SECONDS: until hvdrun's output has it.
wait_log() {
  local deadline=$((SECONDS + $2))
  until grep -q -- "$1" "$log"; do
    [ $SECONDS -lt $deadline ] || hvd_die "the demo waited $2 s for '$1' (log: $log)"
    kill -0 "$job" 2>/dev/null || hvd_die "hvdrun ended early (log: $log)"
    sleep 0.1
  done
}

# first_steps SIZE AFTER: "rank pid host time" for each rank's first step
# in a world of SIZE workers stamped after AFTER.
first_steps() {
  sed -n -E 's/^\[[0-9]+\]<stdout>:first step: rank ([0-9]+) of ([0-9]+), pid ([0-9]+) on ([^,]+), at ([0-9.]+)$/\1 \2 \3 \4 \5/p' "$log" |
    awk -v n="$1" -v after="$2" '$2 == n && $5 > after && !seen[$1]++ { print $1, $3, $4, $5 }'
}

# world SIZE AFTER SECONDS WHAT: waits until every rank of a world of SIZE
# has stepped after AFTER; prints the last of those first steps' times.
world() {
  local deadline=$((SECONDS + $3)) steps
  while :; do
    steps="$(first_steps "$1" "$2")"
    if [ -n "$steps" ] && [ "$(wc -l <<<"$steps")" -ge "$1" ]; then
      awk 'BEGIN { m = 0 } $4 > m { m = $4 } END { printf "%.3f\n", m }' <<<"$steps"
      return
    fi
    [ $SECONDS -lt $deadline ] ||
      hvd_die "after '$4', $1 workers were not all training within $3 s (log: $log)"
    kill -0 "$job" 2>/dev/null || hvd_die "hvdrun ended early, during '$4' (log: $log)"
    sleep 0.05
  done
}

# recovered WHAT EVENT_TIME SIZE SECONDS: waits for the new world, prints
# and records the recovery time.
recovered() {
  local last seconds
  last="$(world "$3" "$2" "$4" "$1")" || exit 1
  seconds="$(awk -v a="$2" -v b="$last" 'BEGIN { printf "%.2f", b - a }')"
  say "$3 workers training again ($(placement "$3" "$2")): $seconds s after the event"
  results+=("$(printf '%-52s %6s s  (%s workers)' "$1:" "$seconds" "$3")")
}

# placement SIZE AFTER: "demo1 ×2, demo4 ×2" for that world.
placement() {
  first_steps "$1" "$2" | awk '{ n[$3]++ } END { for (h in n) print h " ×" n[h] }' |
    sort | paste -sd, - | sed 's/,/, /g'
}

# pids_on HOST SIZE AFTER: the worker pids of HOST in that world, each
# checked to live in HOST's network namespace (ctl.sh pids).
pids_on() {
  local pid ns found=""
  ns="$("$cluster/ctl.sh" pids "$1")"
  for pid in $(first_steps "$2" "$3" | awk -v h="$1" '$3 == h { print $2 }'); do
    grep -qx -- "$pid" <<<"$ns" && found+="$pid"$'\n'
  done
  [ -n "$found" ] || hvd_die "no worker of $1 found in its namespace (log: $log)"
  printf '%s' "$found"
}

worker_on() { pids_on "$@" | head -n 1; }

# rank0_host SIZE AFTER: where rank 0 of that world runs.
rank0_host() { first_steps "$1" "$2" | awk '$1 == 0 { print $3 }'; }

# alive PID: it exists and is not a zombie.
alive() {
  local state
  state="$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" && [ -n "$state" ] && [ "$state" != Z ]
}

# gone PIDS EVENT_TIME SECONDS HOST: waits until none of PIDS is alive (a
# partitioned host's workers stop themselves after 5 s of silence).
gone() {
  local deadline=$((SECONDS + $3)) pid left
  while :; do
    left=""
    for pid in $1; do alive "$pid" && left+=" $pid"; done
    [ -z "$left" ] && break
    [ $SECONDS -lt $deadline ] ||
      hvd_die "workers of $4 (pids$left) still run $3 s after the partition (log: $log)"
    sleep 0.1
  done
  say "the workers on $4 stopped themselves $(elapsed "$2") s after the partition"
}
