#!/usr/bin/env bash
# etcd-up.sh [HOST...]: a real etcd cluster (Debian's etcd-server 3.4) over
# the running test bed of HVD_BED_PREFIX, one member on each HOST (default:
# the bed's first three hosts), each in its host's network namespace, so
# that `ctl.sh crash HOST` and `ctl.sh partition HOST` take the member with
# the host, and `ctl.sh etcd HOST` restarts a crashed one. Data and logs
# under /run/hvd-bed/<prefix>/ (scripts/cluster/etcd-lib.sh), nothing under
# /etc. Prints one line,
#   export HVD_ETCD_ENDPOINTS=http://<addr>:2379,...
# once every member is healthy. down.sh removes it with the bed. Needs root
# and a bed (scripts/cluster/up.sh N). HVD_ETCD_ENABLE_V2=1 also serves
# etcd's v2 API (torchrun's etcd rendezvous, the benchmark's anchor).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/etcd-lib.sh"
bed_need_root "$@"
bed_need_up_with "etcd-server etcd-client" etcd etcdctl
members=("$@")
[ ${#members[@]} -gt 0 ] || mapfile -t members < <(bed_hosts | head -n 3)
[ ${#members[@]} -ge 1 ] || bed_die "the bed has no hosts"
for host in "${members[@]}"; do
  bed_is_host "$host" || bed_die "'$host' is not a host of the bed '$bed_prefix'"
done
[ ! -d "$etcd_dir" ] ||
  bed_die "an etcd cluster already runs over the bed '$bed_prefix' (members: $(etcd_members | tr '\n' ' '))"
started=$SECONDS
mkdir -p "$etcd_dir"
printf '%s\n' "${members[@]}" >"$etcd_dir/members"
echo "hvd-$bed_prefix-$RANDOM$RANDOM" >"$etcd_dir/token"
for host in "${members[@]}"; do etcd_start_member "$host"; done
etcd_wait_healthy "$(IFS=,; echo "${members[*]}")" 30
echo "etcd: ${#members[@]} members over the bed $bed_prefix are healthy in $((SECONDS - started)) s" >&2
echo "export HVD_ETCD_ENDPOINTS=$(etcd_endpoints)"
