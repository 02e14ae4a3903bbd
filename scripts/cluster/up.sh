#!/usr/bin/env bash
# up.sh N: a test bed of N hosts, each a network namespace with its own
# address, loopback, host name and sshd, on one bridge (scripts/cluster/
# lib.sh says where everything lives). Removes a previous bed of the same
# prefix first. Prints the hosts' names, one per line. `ssh HOST true`
# then works from this namespace and between hosts. Needs root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bed_need_root "$@"
[[ "${1:-}" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] || bed_die "usage: $0 N (hosts, at least 1)"
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] ||
  bed_die "sshd is missing: apt-get install openssh-server (scripts/test.sh installs it)"
bed_remove
bed_init
for _ in $(seq "$1"); do bed_add_host; done
