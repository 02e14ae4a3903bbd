# Shared by etcd-up.sh and ctl.sh: a real etcd cluster (Debian's
# etcd-server, 3.4) over the test bed, one member per chosen host, each in
# its host's namespace, so that `ctl.sh crash` and `ctl.sh partition` of the
# host take its member with it. Source it after lib.sh; do not run it.
#
# Under $bed_dir/etcd: "members" (the member hosts, one per line) and
# "token" (the cluster's); under each member's $bed_dir/HOST: etcd/ (its
# data), etcd.pid and etcd.log. Nothing under /etc; down.sh removes it all
# with the bed. Clients reach member HOST at http://<its address>:2379.

etcd_dir="$bed_dir/etcd"

etcd_members() {
  [ -f "$etcd_dir/members" ] && cat "$etcd_dir/members"
}

etcd_is_member() {
  etcd_members | grep -qx -- "$1"
}

# "http://a:2379,http://b:2379,..." of every member.
etcd_endpoints() {
  local host out=""
  for host in $(etcd_members); do
    out+="${out:+,}http://$(bed_address "$host"):2379"
  done
  echo "$out"
}

# Starts HOST's member: a new cluster's first start, or a restart after a
# crash (its data is still there, and etcd then ignores the cluster flags).
etcd_start_member() {
  local host="$1" address cluster="" member
  address="$(bed_address "$host")"
  for member in $(etcd_members); do
    cluster+="${cluster:+,}$member=http://$(bed_address "$member"):2380"
  done
  local state=new
  [ -d "$bed_dir/$host/etcd/member" ] && state=existing
  mkdir -p "$bed_dir/$host"
  ip netns exec "$host" setsid -f sh -c 'echo $$ >"$1"; shift; exec "$@"' sh \
    "$bed_dir/$host/etcd.pid" \
    etcd --name "$host" --data-dir "$bed_dir/$host/etcd" \
    --listen-peer-urls "http://$address:2380" \
    --initial-advertise-peer-urls "http://$address:2380" \
    --listen-client-urls "http://$address:2379" \
    --advertise-client-urls "http://$address:2379" \
    --initial-cluster "$cluster" --initial-cluster-state "$state" \
    --initial-cluster-token "$(cat "$etcd_dir/token")" \
    ${HVD_ETCD_ENABLE_V2:+--enable-v2=true} \
    </dev/null >>"$bed_dir/$host/etcd.log" 2>&1
}

# Waits, up to $2 seconds, until the members named in $1 (comma-separated
# hosts) answer healthy: each has a leader and commits.
etcd_wait_healthy() {
  local hosts="$1" seconds="$2" endpoints="" host
  for host in ${hosts//,/ }; do
    endpoints+="${endpoints:+,}http://$(bed_address "$host"):2379"
  done
  local deadline=$((SECONDS + seconds))
  until etcdctl --endpoints "$endpoints" --dial-timeout 1s \
      --command-timeout 2s endpoint health >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] ||
      bed_die "etcd members $hosts were not healthy within $seconds s (logs: $bed_dir/<host>/etcd.log)"
    sleep 0.1
  done
}

# Stops every member (by its pid file, if that pid is still in its host's
# namespace) and removes the cluster's data: the bed stays.
etcd_down() {
  local host pid
  for host in $(etcd_members); do
    pid="$(cat "$bed_dir/$host/etcd.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && ip netns pids "$host" 2>/dev/null | grep -qx -- "$pid"; then
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -rf "$bed_dir/$host/etcd" "$bed_dir/$host/etcd.pid"
  done
  rm -rf "$etcd_dir"
}
