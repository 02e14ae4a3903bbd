#!/usr/bin/env bash
# slurm-down.sh: stops the Slurm cluster that slurm-up.sh started over the
# test bed of HVD_BED_PREFIX: cancels its jobs (waiting up to 15 s for them
# to end), then stops each host's slurmd, slurmctld, slurmdbd, mariadbd and
# munged, each by its pid file (SIGTERM, SIGKILL after a grace), and removes
# /run/hvd-bed/<prefix>/slurm. The bed itself stays up; down.sh runs this
# first. Safe to run twice and when nothing is up. Needs root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/slurm-lib.sh"
bed_need_root "$@"
slurm_down
