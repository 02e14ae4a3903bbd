#!/usr/bin/env bash
# down.sh: removes the test bed (a Slurm cluster over it first, as
# slurm-down.sh does; every process in its hosts, namespaces, bridge,
# /etc/hosts block, ssh config, keys). Safe to run twice.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bed_need_root "$@"
bed_remove
