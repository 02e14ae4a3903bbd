#!/bin/bash
# The chaos soak (issue 32): scripts/chaos/soak.sh SEED MINUTES
#
# One elastic job on the test bed (workers over ssh, a 3-member etcd, a
# leader and a standby hvdrun) through a schedule of faults the seed fixes:
# worker kills and hangs, host crashes, partitions and additions, leader
# crashes and etcd member losses. It passes when the job ends with the
# model a fault-free run computes and every step applied exactly once.
# What it did is printed as "soak: +T s FAULT TARGET" lines. Needs root
# and scripts/setup.sh --with-tests (tests/integration/test_chaos_soak.py).
set -euo pipefail
if [[ $# -ne 2 || ! $1 =~ ^[0-9]+$ || ! $2 =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "usage: $0 SEED MINUTES" >&2
  exit 2
fi
cd "$(dirname "$0")/../../tests/integration"
HVD_SOAK_SEED=$1 HVD_SOAK_MINUTES=$2 exec /usr/bin/python3 -m pytest -q -s \
  -p no:cacheprovider test_chaos_soak.py -k test_chaos_soak
