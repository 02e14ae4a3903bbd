#!/usr/bin/env bash
# down.sh: removes the test bed (every process in its hosts, namespaces,
# bridge, /etc/hosts block, ssh config, keys). Safe to run twice.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bed_need_root "$@"
bed_remove
