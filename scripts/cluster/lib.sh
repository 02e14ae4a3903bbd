# Shared by up.sh, down.sh and ctl.sh: where a test bed lives and how one of
# its hosts is made and removed. Source it; do not run it.
#
# A bed is named by HVD_BED_PREFIX (default "node"): its hosts are
# <prefix>1, <prefix>2, ..., each a network namespace of the same name on
# the bridge br-<prefix>, with the address <net>.<10+N> in the /24 of
# HVD_BED_NET (default 10.213.0; the bridge, i.e. this root namespace, is
# <net>.1). Two beds with different prefixes and nets live side by side.
# Its state (keys, known_hosts, each host's sshd config and log) is in
# /run/hvd-bed/<prefix>.

bed_prefix="${HVD_BED_PREFIX:-node}"
bed_net="${HVD_BED_NET:-10.213.0}"
bed_dir="/run/hvd-bed/$bed_prefix"
bed_bridge="br-$bed_prefix"
bed_hosts_begin="# hvd test bed $bed_prefix: begin (down.sh of scripts in cluster removes it)"
bed_hosts_end="# hvd test bed $bed_prefix: end"
bed_ssh_config="/etc/ssh/ssh_config.d/hvd-bed-$bed_prefix.conf"
# A second port, where sshd takes only a second key pair (tests of hvdrun's
# -p and -i): the ssh config names neither, and the bed's usual key is
# refused there.
bed_alt_port=2222

bed_die() {
  echo "error: $*" >&2
  exit 1
}

bed_need_root() {
  [ "$(id -u)" -eq 0 ] ||
    bed_die "the test bed needs root (network namespaces, sshd): run 'sudo $0 $*'"
  [[ "$bed_prefix" =~ ^[a-z][a-z0-9]{0,7}$ ]] ||
    bed_die "HVD_BED_PREFIX '$bed_prefix' must be 1-8 lower-case letters or digits, starting with a letter"
  [[ "$bed_net" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    bed_die "HVD_BED_NET '$bed_net' must be the first three numbers of an IPv4 /24, e.g. 10.213.0"
}

# For the scripts that run something over a bed (slurm-up.sh, etcd-up.sh):
# fails unless the bed is up and every tool in "$@" after the first is on
# the PATH; the first says which packages bring them.
bed_need_up_with() {
  local packages="$1" tool
  shift
  [ -s "$bed_dir/hosts" ] ||
    bed_die "no test bed '$bed_prefix' is up: run scripts/cluster/up.sh N first (with the same HVD_BED_PREFIX and HVD_BED_NET)"
  for tool in "$@"; do
    command -v "$tool" >/dev/null ||
      bed_die "$tool is missing: apt-get install $packages (scripts/test.sh installs them)"
  done
}

# The hosts of the bed, in creation order (one name per line).
bed_hosts() {
  [ -f "$bed_dir/hosts" ] && cat "$bed_dir/hosts"
  return 0
}

bed_address() {  # HOST -> its address
  echo "$bed_net.$((10 + ${1#"$bed_prefix"}))"
}

bed_is_host() {
  bed_hosts | grep -qx -- "$1"
}

# /etc/hosts without the bed's marked block (compared as whole lines, not
# patterns).
bed_hosts_without_block() {
  awk -v begin="$bed_hosts_begin" -v end="$bed_hosts_end" '
    $0 == begin { inside = 1; next }
    $0 == end { inside = 0; next }
    !inside { print }' /etc/hosts
}

# FILE gets CONTENT in place (never replaced: a running host sees
# /etc/netns/<host>/hosts through a bind mount of its inode, and /etc/hosts
# may be a bind mount itself), without ever being empty: the bytes are
# written over the old ones, then the file is cut to length, so a process
# resolving a name meanwhile (hvdrun asking whether "localhost" is this
# machine while a host is added) still finds the unchanged lines before
# the bed's block.
bed_write_in_place() {
  printf '%s' "$2" | dd of="$1" conv=notrunc status=none
  truncate -s "$(printf '%s' "$2" | wc -c)" "$1"
}

# Runs "$@" holding the lock of /etc/hosts: beds of other prefixes edit
# their own blocks of it too.
bed_with_hosts_lock() {
  mkdir -p /run/hvd-bed
  (
    flock -w 30 9 || bed_die "/run/hvd-bed/hosts.lock stayed taken for 30 s"
    "$@"
  ) 9>/run/hvd-bed/hosts.lock
}

# Rewrites every name-resolution file of the bed in place, under the lock.
# The root namespace's /etc/hosts gets a marked block with every host; each
# host's own view maps its own name to 127.0.1.1 first, as Debian's
# installer writes /etc/hosts, and the others to their addresses.
bed_write_names() {
  bed_with_hosts_lock bed_write_names_unlocked
}

bed_write_names_unlocked() {
  local lines="" host
  for host in $(bed_hosts); do
    lines+="$(bed_address "$host") $host"$'\n'
  done
  local kept
  kept="$(bed_hosts_without_block)"
  if [ -n "$lines" ]; then
    bed_write_in_place /etc/hosts \
      "$(printf '%s\n%s\n%s%s' "$kept" "$bed_hosts_begin" "$lines" "$bed_hosts_end")"$'\n'
  else
    bed_write_in_place /etc/hosts "$kept"$'\n'
  fi
  for host in $(bed_hosts); do
    mkdir -p "/etc/netns/$host"
    touch "/etc/netns/$host/hosts"
    bed_write_in_place "/etc/netns/$host/hosts" \
      "$(printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$host")"$'\n'"$lines"
  done
  local known=""
  for host in $(bed_hosts); do
    known+="$host,$(bed_address "$host") $(cut -d' ' -f1-2 "$bed_dir/$host/host_key.pub")"$'\n'
    known+="[$host]:$bed_alt_port,[$(bed_address "$host")]:$bed_alt_port $(cut -d' ' -f1-2 "$bed_dir/$host/host_key.pub")"$'\n'
  done
  printf '%s' "$known" >"$bed_dir/known_hosts"
}

# The bed's block out of /etc/hosts.
bed_remove_names_unlocked() {
  if grep -qxF "$bed_hosts_begin" /etc/hosts 2>/dev/null; then
    local kept
    kept="$(bed_hosts_without_block)"
    bed_write_in_place /etc/hosts "$kept"$'\n'
  fi
}

# Creates the bed's keys and ssh client config (once per bed).
bed_init() {
  mkdir -p "$bed_dir" /run/sshd
  chmod 700 "$bed_dir"
  : >"$bed_dir/hosts"
  ssh-keygen -q -t ed25519 -N "" -C "hvd test bed $bed_prefix" -f "$bed_dir/id_ed25519"
  ssh-keygen -q -t ed25519 -N "" -C "hvd test bed $bed_prefix (-i only)" -f "$bed_dir/alt_id_ed25519"
  cp "$bed_dir/id_ed25519.pub" "$bed_dir/authorized_keys"
  cp "$bed_dir/alt_id_ed25519.pub" "$bed_dir/alt_authorized_keys"
  ip link add "$bed_bridge" type bridge
  ip addr add "$bed_net.1/24" dev "$bed_bridge"
  ip link set "$bed_bridge" up
  # Frames between ports of this bridge are the bed's own traffic: a
  # firewall that filters bridged frames (br_netfilter) must not see them.
  if [ -w /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
    echo 0 >/proc/sys/net/bridge/bridge-nf-call-iptables
  fi
  mkdir -p "$(dirname "$bed_ssh_config")"
  cat >"$bed_ssh_config" <<CONFIG
# The hvd test bed $bed_prefix (scripts/cluster/up.sh; down.sh removes it).
Host $bed_prefix* $bed_net.*
  IdentityFile $bed_dir/id_ed25519
  UserKnownHostsFile $bed_dir/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
CONFIG
}

# Starts one more host; prints its name.
bed_add_host() {
  local last index host
  last="$(bed_hosts | tail -n 1)"
  index=$(( ${last:+${last#"$bed_prefix"}} + 1 ))
  host="$bed_prefix$index"
  [ "$index" -le 240 ] || bed_die "a bed has at most 240 hosts"
  local address veth_root="v-$host" veth_host="eth0"
  mkdir -p "$bed_dir/$host"
  address="$(bed_address "$host")"
  ip netns add "$host"
  ip link add "$veth_root" type veth peer name "$veth_host" netns "$host"
  ip link set "$veth_root" master "$bed_bridge"
  ip link set "$veth_root" up
  ip -n "$host" addr add "$address/24" dev "$veth_host"
  ip -n "$host" link set "$veth_host" up
  ip -n "$host" link set lo up
  ssh-keygen -q -t ed25519 -N "" -C "$host" -f "$bed_dir/$host/host_key"
  cat >"$bed_dir/$host/sshd_config" <<CONFIG
ListenAddress $address:22
ListenAddress $address:$bed_alt_port
HostKey $bed_dir/$host/host_key
PidFile $bed_dir/$host/sshd.pid
AuthorizedKeysFile $bed_dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp internal-sftp
Match LocalPort $bed_alt_port
  AuthorizedKeysFile $bed_dir/alt_authorized_keys
CONFIG
  echo "$host" >>"$bed_dir/hosts"
  bed_write_names
  bed_start_sshd "$host"
  echo "$host"
}

# Starts HOST's sshd and waits, with a deadline, until it listens.
bed_start_sshd() {
  local host="$1" address
  address="$(bed_address "$host")"
  # Its own UTS namespace: `hostname` on the host says its name, and its
  # mount namespace (ip netns exec) shows its /etc/netns/<host>/hosts.
  ip netns exec "$host" unshare --uts sh -c \
    "hostname $host && exec /usr/sbin/sshd -f $bed_dir/$host/sshd_config -E $bed_dir/$host/sshd.log"
  # sshd forks into the background once it listens; wait for the port
  # with a deadline.
  local deadline=$((SECONDS + 10))
  until ip netns exec "$host" bash -c "echo >/dev/tcp/$address/22" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || bed_die "sshd of $host did not listen on $address:22 within 10 s (log: $bed_dir/$host/sshd.log)"
    sleep 0.05
  done
}

# HOST's sshd gets a new host key, which the bed's known_hosts does not
# hold (until the bed's names are written again: ctl.sh add): the host was
# reinstalled, or another machine took its address.
bed_rekey_host() {
  local host="$1" pid
  pid="$(cat "$bed_dir/$host/sshd.pid")"
  kill "$pid"
  local deadline=$((SECONDS + 10))
  while kill -0 "$pid" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || bed_die "sshd of $host (pid $pid) did not stop within 10 s"
    sleep 0.05
  done
  rm -f "$bed_dir/$host/host_key" "$bed_dir/$host/host_key.pub"
  ssh-keygen -q -t ed25519 -N "" -C "$host (a new key)" -f "$bed_dir/$host/host_key"
  bed_start_sshd "$host"
}

# Removes every trace of the bed; safe to run twice. A Slurm cluster over
# it (slurm-up.sh) is stopped first: its daemons outside the hosts would
# outlive them.
bed_remove() {
  local host pid
  if [ -d "$bed_dir/slurm" ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/slurm-lib.sh"
    slurm_down quick
  fi
  for host in $(bed_hosts) $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$bed_prefix[0-9]+\$"); do
    if ip netns list | awk '{print $1}' | grep -qx -- "$host"; then
      for pid in $(ip netns pids "$host" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$host" 2>/dev/null || true
    fi
    ip link del "v-$host" 2>/dev/null || true
    rm -rf "/etc/netns/$host"
  done
  ip link del "$bed_bridge" 2>/dev/null || true
  bed_with_hosts_lock bed_remove_names_unlocked
  rm -f "$bed_ssh_config"
  rm -rf "$bed_dir"
}
