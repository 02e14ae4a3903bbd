#!/usr/bin/env bash
# ctl.sh COMMAND [HOST]: drives a running test bed.
#   add             one more host; prints its name
#   crash HOST      kills every process in HOST's namespace (its sshd too),
#                   as a machine that lost power
#   partition HOST  takes HOST's link down: it stays up but goes silent
#   heal HOST       brings HOST's link back
#   rekey HOST      restarts HOST's sshd with a new host key that the bed's
#                   known_hosts does not hold (a reinstalled host, or an
#                   impostor at its address)
#   pids HOST       the pids in HOST's namespace, one per line
#   slurmd HOST     (re)starts HOST's slurmd, once slurm-up.sh runs a Slurm
#                   cluster over the bed, and waits until the node takes
#                   jobs: after a crash, or after `add` for one of the spare
#                   nodes that slurm-up.sh lists (HVD_SLURM_SPARE_NODES)
#   etcd HOST       restarts HOST's etcd member (after a crash), once
#                   etcd-up.sh runs an etcd cluster over the bed, and waits
#                   until it is healthy
#   hosts           the bed's hosts, one per line
# Processes are found by namespace only (ip netns pids), never by name.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/slurm-lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/etcd-lib.sh"
bed_need_root "$@"
[ -d "$bed_dir" ] || bed_die "no test bed '$bed_prefix' is up: run scripts/cluster/up.sh N"
command="${1:-}"
host="${2:-}"
needs_host() {
  [ -n "$host" ] || bed_die "usage: $0 $command HOST"
  bed_is_host "$host" || bed_die "'$host' is not a host of the bed '$bed_prefix' (hosts: $(bed_hosts | tr '\n' ' '))"
}
case "$command" in
  add) bed_add_host ;;
  crash)
    needs_host
    # A machine that loses power stops every process at once; SIGKILL to
    # one pid after another would let a process that dies later see the
    # others die first and act on it (an hvdrun that fails its job as its
    # ssh clients die). So stop them all first: once the list is the same
    # after a round of SIGSTOP, nothing can fork any more.
    deadline=$((SECONDS + 10))
    stopped=""
    while pids="$(ip netns pids "$host")" && [ -n "$pids" ] && [ "$pids" != "$stopped" ]; do
      [ $SECONDS -lt $deadline ] || bed_die "processes of $host kept forking for 10 s: $pids"
      kill -STOP $pids 2>/dev/null || true
      stopped="$pids"
    done
    # Processes may fork while they die: repeat until the namespace is empty.
    while pids="$(ip netns pids "$host")" && [ -n "$pids" ]; do
      [ $SECONDS -lt $deadline ] || bed_die "processes of $host survived SIGKILL for 10 s: $pids"
      kill -9 $pids 2>/dev/null || true
    done
    ;;
  partition) needs_host; ip link set "v-$host" down ;;
  heal) needs_host; ip link set "v-$host" up ;;
  rekey) needs_host; bed_rekey_host "$host" ;;
  pids) needs_host; ip netns pids "$host" ;;
  slurmd)
    needs_host
    [ -f "$slurm_conf" ] || bed_die "no Slurm cluster runs over the bed '$bed_prefix': run scripts/cluster/slurm-up.sh"
    slurm_is_node "$host" ||
      bed_die "'$host' is no node of the Slurm cluster (nodes: $(slurm_nodes | tr '\n' ' ')): slurm-up.sh lists HVD_SLURM_SPARE_NODES spare ones"
    export SLURM_CONF="$slurm_conf"
    slurm_start_slurmd "$host"
    slurm_wait_node "$host" 30
    ;;
  etcd)
    needs_host
    etcd_is_member "$host" ||
      bed_die "'$host' runs no etcd member (members: $(etcd_members | tr '\n' ' ')): start a cluster with scripts/cluster/etcd-up.sh"
    etcd_start_member "$host"
    etcd_wait_healthy "$host" 30
    ;;
  hosts) bed_hosts ;;
  *) bed_die "usage: $0 add | crash HOST | partition HOST | heal HOST | pids HOST | slurmd HOST | etcd HOST | hosts" ;;
esac
