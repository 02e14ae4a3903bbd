#!/usr/bin/env bash
# slurm-up.sh: a real Slurm cluster (22.05: slurmctld, slurmdbd, one slurmd
# per host) over the running test bed of HVD_BED_PREFIX, with accounting
# (sacct) in a private slurmdbd and mariadbd and a private munged. Every
# daemon runs as root; the batch jobs do too. Removes a previous cluster of
# the same bed first. Prints one line,
#   export SLURM_CONF=/run/hvd-bed/<prefix>/slurm/slurm.conf
# for `eval "$(scripts/cluster/slurm-up.sh)"`: sinfo, sbatch, srun, sacct
# and scontrol then talk to this cluster, and srun works inside a batch job
# (sbatch passes SLURM_CONF on). Its partition is "debug" (every node).
# The nodes are the bed's hosts plus HVD_SLURM_SPARE_NODES (default 2)
# spare ones, down until `ctl.sh add` makes the host and `ctl.sh slurmd
# HOST` starts its slurmd; HVD_SLURM_CPUS (default 2) cores per node.
# Config, logs and state: /run/hvd-bed/<prefix>/slurm (scripts/cluster/
# slurm-lib.sh says what is where). slurm-down.sh (or down.sh) stops it all.
# Needs root and a bed (scripts/cluster/up.sh N).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/slurm-lib.sh"
bed_need_root "$@"
bed_need_up_with "slurmctld slurmd slurm-client slurmdbd munge mariadb-server" \
  munged mungekey mariadbd mariadb-admin slurmdbd slurmctld slurmd sacctmgr \
  scontrol sinfo
started=$SECONDS
slurm_down
mkdir -p "$slurm_dir/nodes"
chmod 700 "$slurm_dir"
export SLURM_CONF="$slurm_conf"
slurm_write_conf
slurm_start_munged
slurm_start_mariadbd
slurm_start_slurmdbd
slurm_start_slurmctld
for host in $(bed_hosts); do slurm_start_slurmd "$host"; done
for host in $(bed_hosts); do slurm_wait_node "$host" 30; done
echo "slurm: cluster $bed_prefix is up ($(bed_hosts | wc -l) nodes idle) in $((SECONDS - started)) s" >&2
echo "export SLURM_CONF=$slurm_conf"
