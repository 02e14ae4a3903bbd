#!/usr/bin/env bash
# etcd-down.sh: stops the etcd cluster etcd-up.sh started over the bed of
# HVD_BED_PREFIX and removes its data; the bed stays (down.sh removes both).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/etcd-lib.sh"
bed_need_root "$@"
etcd_down
