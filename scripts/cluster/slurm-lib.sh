# Shared by slurm-up.sh, slurm-down.sh, ctl.sh and lib.sh's bed_remove: a
# real Slurm cluster over a test bed's hosts. Source it after lib.sh; do not
# run it.
#
# Everything lives in /run/hvd-bed/<prefix>/slurm (slurm_dir), nothing in
# /etc/slurm or /etc/munge:
#   slurm.conf, slurmdbd.conf (mode 600), cgroup.conf, plugstack.conf
#              (empty)
#   munge/     a private munged: its key, socket, pid file, log
#   mysql/     a private mariadbd: its datadir, unix socket (no TCP), pid
#              file, log
#   ctld/      slurmctld's StateSaveLocation
#   slurmctld.{log,pid}, slurmdbd.{log,pid}
#   nodes/<host>/  each node's SlurmdSpoolDir (spool/), slurmd.log and
#              slurmd.pid
# Every daemon runs as root. munged, mariadbd, slurmdbd and slurmctld run in
# this (the root) namespace; each node's slurmd runs inside its host's
# namespace with the host's name as its UTS host name, as its sshd does, so
# ctl.sh crash takes it and every job step on the host down with it.
#
# Ports: slurmctld and slurmdbd listen on every address of this namespace,
# so two beds side by side need different ports: they are <base> and
# <base>+1, where <base> is HVD_SLURM_PORT or, by default, a number in
# 20000-31990 derived from HVD_BED_NET. Each slurmd has its namespace to
# itself and listens on Slurm's default 6818.
#
# Nodes: one per bed host (HVD_SLURM_CPUS cores each, default 2) plus
# HVD_SLURM_SPARE_NODES (default 2) spare nodes named as the hosts that
# `ctl.sh add` makes next, with their future addresses. A spare node is
# unknown and not responding (sinfo: unk*) until `ctl.sh slurmd HOST`
# starts its slurmd; jobs never land on it meanwhile.

slurm_dir="$bed_dir/slurm"
slurm_conf="$slurm_dir/slurm.conf"
slurm_munge_socket="$slurm_dir/munge/munge.sock"
slurm_mysql_socket="$slurm_dir/mysql/mysqld.sock"

# The first of the two ports of this bed's slurmctld and slurmdbd.
slurm_port_base() {
  if [ -n "${HVD_SLURM_PORT:-}" ]; then
    echo "$HVD_SLURM_PORT"
    return
  fi
  local b c
  IFS=. read -r _ b c <<<"$bed_net"
  echo $((20000 + (b * 256 + c) % 1200 * 10))
}

# The Slurm nodes of the cluster (bed hosts and spares), one per line.
slurm_nodes() {
  [ -f "$slurm_conf" ] && sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$slurm_conf"
  return 0
}

slurm_is_node() {
  slurm_nodes | grep -qx -- "$1"
}

# Whether PID is a live process (not a zombie) whose name is NAME: a pid
# file may be stale, and its number taken by another process since.
slurm_pid_is() {
  local pid="$1" name="$2" state
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 1
  state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null)"
  [ -n "$state" ] && [ "$state" != Z ]
}

# The pids slurm_stop_pidfile stopped: dead, but maybe not yet reaped.
slurm_stopped_pids=()

# Stops the NAME process of PIDFILE: SIGTERM, SIGKILL after GRACE seconds
# (default 10), then waits up to 5 s more for it to be dead. Nothing to do
# when the file is missing or stale.
slurm_stop_pidfile() {
  local name="$1" pidfile="$2" grace="${3:-10}" pid deadline
  [ -f "$pidfile" ] || return 0
  pid="$(tr -d ' \n' <"$pidfile" 2>/dev/null || true)"
  if slurm_pid_is "$pid" "$name"; then
    slurm_stopped_pids+=("$pid")
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + grace))
    while slurm_pid_is "$pid" "$name" && [ $SECONDS -lt "$deadline" ]; do sleep 0.05; done
    if slurm_pid_is "$pid" "$name"; then
      echo "warning: $name ($pid) outlived SIGTERM for $grace s: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 5))
      while slurm_pid_is "$pid" "$name"; do
        [ $SECONDS -lt "$deadline" ] || bed_die "$name ($pid, $pidfile) survived SIGKILL for 5 s"
        sleep 0.05
      done
    fi
  fi
  rm -f "$pidfile"
}

# Fails with a message naming LOG (and its last lines) when "$@" does not
# succeed within SECONDS; WHAT says what was awaited.
slurm_wait_until() {
  local what="$1" seconds="$2" log="$3" deadline
  shift 3
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge "$deadline" ]; then
      echo "error: $what within $seconds s (log: $log); its last lines:" >&2
      tail -n 15 "$log" 2>/dev/null | sed 's/^/  /' >&2
      exit 1
    fi
    sleep 0.1
  done
}

slurm_write_conf() {
  local port ctld_host cpus="${HVD_SLURM_CPUS:-2}" spares="${HVD_SLURM_SPARE_NODES:-2}"
  [[ "$cpus" =~ ^[1-9][0-9]*$ ]] || bed_die "HVD_SLURM_CPUS '$cpus' must be a positive number"
  [[ "$spares" =~ ^[0-9]+$ ]] || bed_die "HVD_SLURM_SPARE_NODES '$spares' must be a number"
  port="$(slurm_port_base)"
  if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1024 ] || [ "$port" -gt 65534 ]; then
    bed_die "HVD_SLURM_PORT '$port' must be a port number in 1024-65534"
  fi
  ctld_host="$(hostname -s)"
  local nodes="" host last index
  for host in $(bed_hosts); do
    nodes+="$host"$'\n'
  done
  last="$(bed_hosts | tail -n 1)"
  index="${last#"$bed_prefix"}"
  for _ in $(seq "$spares"); do
    index=$((index + 1))
    if [ "$index" -le 240 ]; then nodes+="$bed_prefix$index"$'\n'; fi
  done
  # Configured resources win over what slurmd finds (config_overrides):
  # every node runs on this one machine, whatever its core count.
  cat >"$slurm_conf" <<CONFIG
# Slurm of the hvd test bed $bed_prefix (scripts/cluster/slurm-up.sh;
# slurm-down.sh removes it).
ClusterName=$bed_prefix
SlurmctldHost=$ctld_host($bed_net.1)
SlurmctldPort=$port
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$slurm_munge_socket
StateSaveLocation=$slurm_dir/ctld
SlurmctldPidFile=$slurm_dir/slurmctld.pid
SlurmctldLogFile=$slurm_dir/slurmctld.log
SlurmctldDebug=info
SlurmdSpoolDir=$slurm_dir/nodes/%n/spool
SlurmdPidFile=$slurm_dir/nodes/%n/slurmd.pid
SlurmdLogFile=$slurm_dir/nodes/%n/slurmd.log
SlurmdDebug=info
SlurmdParameters=config_overrides
PlugStackConfig=$slurm_dir/plugstack.conf
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
# A job that loses a node fails (NODE_FAIL) rather than running again.
JobRequeue=0
ReturnToService=2
SlurmdTimeout=10
SlurmctldTimeout=10
MessageTimeout=5
KillWait=2
InactiveLimit=0
MinJobAge=300
UnkillableStepTimeout=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$bed_net.1
AccountingStoragePort=$((port + 1))
# For slurmdbd connections this, not AuthInfo, names munged's socket.
AccountingStoragePass=$slurm_munge_socket
CONFIG
  for host in $nodes; do
    echo "NodeName=$host NodeAddr=$(bed_address "$host") NodeHostname=$host CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN" >>"$slurm_conf"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$slurm_conf"
  : >"$slurm_dir/plugstack.conf"
  # slurmd loads a cgroup plugin whatever ProctrackType and TaskPlugin say,
  # and by default probes /sys/fs/cgroup for its version: in a host's
  # namespace (ip netns exec mounts a sysfs of its own) nothing is mounted
  # there, and slurmd stops. Naming the version skips the probe; with
  # proctrack/linuxproc and task/none no cgroup is ever made.
  echo "CgroupPlugin=cgroup/v1" >"$slurm_dir/cgroup.conf"
  (
    umask 077
    cat >"$slurm_dir/slurmdbd.conf" <<CONFIG
# slurmdbd of the hvd test bed $bed_prefix (scripts/cluster/slurm-up.sh).
AuthType=auth/munge
AuthInfo=socket=$slurm_munge_socket
DbdHost=$ctld_host
DbdAddr=$bed_net.1
DbdPort=$((port + 1))
SlurmUser=root
LogFile=$slurm_dir/slurmdbd.log
PidFile=$slurm_dir/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
# localhost: the socket in MYSQL_UNIX_PORT, which slurm_start_slurmdbd sets.
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
CONFIG
  )
  chmod 600 "$slurm_dir/slurmdbd.conf"
}

slurm_start_munged() {
  mkdir -p "$slurm_dir/munge"
  chmod 700 "$slurm_dir/munge"
  mungekey --create --keyfile="$slurm_dir/munge/munge.key"
  # --force: munged wants every directory above its socket to be open to
  # all, and the bed's directory is 700 (only root talks to this munged).
  munged --force --num-threads=4 \
    --key-file="$slurm_dir/munge/munge.key" --socket="$slurm_munge_socket" \
    --pid-file="$slurm_dir/munge/munged.pid" --log-file="$slurm_dir/munge/munged.log" \
    --seed-file="$slurm_dir/munge/munged.seed" \
    </dev/null >>"$slurm_dir/munge/munged.log" 2>&1 ||
    bed_die "munged did not start (log: $slurm_dir/munge/munged.log)"
  slurm_wait_until "munged did not answer" 10 "$slurm_dir/munge/munged.log" \
    sh -c "munge -S '$slurm_munge_socket' -n | unmunge -S '$slurm_munge_socket'"
}

# The accounting database: no TCP (--skip-networking), only the socket in
# a directory that only root can enter, hence no grant tables either.
slurm_start_mariadbd() {
  local mysql="$slurm_dir/mysql"
  mkdir -p "$mysql/data"
  chmod 700 "$mysql"
  (
    cd "$mysql" || exit 1
    setsid mariadbd --no-defaults --user=root --datadir="$mysql/data" \
      --socket="$slurm_mysql_socket" --pid-file="$mysql/mysqld.pid" \
      --log-error="$mysql/mysqld.log" --skip-networking --skip-grant-tables \
      --innodb-log-file-size=32M --innodb-lock-wait-timeout=900 \
      </dev/null >>"$mysql/mysqld.log" 2>&1 &
  )
  slurm_wait_until "mariadbd did not answer on $slurm_mysql_socket" 20 "$mysql/mysqld.log" \
    mariadb-admin --no-defaults --socket="$slurm_mysql_socket" ping
  slurm_wait_until "mariadbd wrote no pid file" 5 "$mysql/mysqld.log" test -s "$mysql/mysqld.pid"
}

slurm_start_slurmdbd() {
  MYSQL_UNIX_PORT="$slurm_mysql_socket" slurmdbd \
    </dev/null >>"$slurm_dir/slurmdbd.log" 2>&1 ||
    bed_die "slurmdbd did not start (log: $slurm_dir/slurmdbd.log)"
  slurm_wait_until "slurmdbd did not answer (sacctmgr show cluster)" 20 "$slurm_dir/slurmdbd.log" \
    sacctmgr -n show cluster
  # The cluster must be known to slurmdbd before slurmctld registers.
  sacctmgr -i add cluster "$bed_prefix" >/dev/null ||
    bed_die "sacctmgr could not add the cluster $bed_prefix (log: $slurm_dir/slurmdbd.log)"
}

slurm_start_slurmctld() {
  mkdir -p "$slurm_dir/ctld"
  slurmctld -c -f "$slurm_conf" </dev/null >>"$slurm_dir/slurmctld.log" 2>&1 ||
    bed_die "slurmctld did not start (log: $slurm_dir/slurmctld.log)"
  slurm_wait_until "slurmctld was not UP (scontrol ping)" 20 "$slurm_dir/slurmctld.log" \
    sh -c 'scontrol ping | grep -q "is UP"'
}

# Starts HOST's slurmd in HOST's namespace, stopping a running one first.
slurm_start_slurmd() {
  local host="$1" node="$slurm_dir/nodes/$1"
  mkdir -p "$node/spool"
  slurm_stop_pidfile slurmd "$node/slurmd.pid"
  # Its own UTS namespace, as sshd's: `hostname` in a job step says the
  # host's name. slurmd forks into the background.
  ip netns exec "$host" unshare --uts sh -c 'hostname "$1" && exec slurmd -N "$1" -f "$2"' \
    sh "$host" "$slurm_conf" </dev/null >>"$node/slurmd.log" 2>&1 ||
    bed_die "slurmd of $host did not start (log: $node/slurmd.log)"
}

# The state of NODE as sinfo says it (e.g. idle, mixed, down*).
slurm_node_state() {
  sinfo -h -N -n "$1" -o '%T' 2>/dev/null | head -n 1
}

# Waits (deadline SECONDS, default 30) until NODE's slurmd has registered
# and the node takes jobs (idle, mixed, allocated or completing). A node
# that answers but stays down is resumed once.
slurm_wait_node() {
  local host="$1" seconds="${2:-30}" deadline state resumed=""
  deadline=$((SECONDS + seconds))
  while state="$(slurm_node_state "$host")"; ! [[ "$state" =~ ^(idle|mixed|allocated|completing)$ ]]; do
    if [ $SECONDS -ge "$deadline" ]; then
      echo "error: the Slurm node $host was not idle within $seconds s (state '$state'; log: $slurm_dir/nodes/$host/slurmd.log); its last lines:" >&2
      tail -n 15 "$slurm_dir/nodes/$host/slurmd.log" 2>/dev/null | sed 's/^/  /' >&2
      exit 1
    fi
    if [ "$state" = down ] && [ -z "$resumed" ]; then
      scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
      resumed=1
    fi
    sleep 0.1
  done
}

# Stops everything slurm-up.sh started and removes slurm_dir; safe to run
# twice and when nothing is up. Jobs are cancelled first, and awaited up to
# 15 s: a slurmd that stops leaves its job steps running. With "quick" (the
# bed goes next, and every process in its hosts with it) nothing is
# cancelled.
slurm_down() {
  local jobs=()
  [ -d "$slurm_dir" ] || return 0
  export SLURM_CONF="$slurm_conf"
  if [ "${1:-}" != quick ] && [ -f "$slurm_conf" ] &&
     slurm_pid_is "$(cat "$slurm_dir/slurmctld.pid" 2>/dev/null)" slurmctld &&
     mapfile -t jobs < <(squeue -h -o %i 2>/dev/null) && [ "${#jobs[@]}" -gt 0 ]; then
    scancel --quiet "${jobs[@]}" 2>/dev/null || true
    # Steps on a crashed or silent host never end: give up after 15 s.
    local deadline=$((SECONDS + 15))
    while [ -n "$(squeue -h -t R,CG,S,CF -o %i 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do
      sleep 0.1
    done
  fi
  local node
  for node in "$slurm_dir"/nodes/*/; do
    if [ -d "$node" ]; then slurm_stop_pidfile slurmd "$node/slurmd.pid"; fi
  done
  slurm_stop_pidfile slurmctld "$slurm_dir/slurmctld.pid"
  slurm_stop_pidfile slurmdbd "$slurm_dir/slurmdbd.pid"
  slurm_stop_pidfile mariadbd "$slurm_dir/mysql/mysqld.pid" 20
  slurm_stop_pidfile munged "$slurm_dir/munge/munged.pid"
  rm -rf "$slurm_dir"
  # The daemons' parent is init, which may reap them only a second or two
  # later: until then ps still lists them (as zombies). Wait for that too,
  # up to 5 s, so that ps shows none once this returns.
  local pid deadline=$((SECONDS + 5))
  for pid in "${slurm_stopped_pids[@]}"; do
    while [ -e "/proc/$pid" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  done
}
