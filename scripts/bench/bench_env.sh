# Sourced by scripts/bench/{allreduce,fusion}/run.sh after lib/common.sh:
# the build, the Python and the threads their ranks run with.
#   build    HVD_BUILD_DIR, or build/ after scripts/setup.sh --with-benchmarks
#   python   HVD_PYTHON (a Python of your own, with its own torch and numpy,
#            as on the GPU machine), or /usr/bin/python3 with Debian's
#   cores    the machine's cores
# PYTHONPATH gets the build's extension and python/ first.
# bench_keep_impls ARRAY: HVD_BENCH_IMPLS's choice among an array's names.

build="${HVD_BUILD_DIR:-}"
if [ -z "$build" ]; then
  build="$hvd_root/build"
  "$hvd_root/scripts/setup.sh" --with-benchmarks
fi
python="${HVD_PYTHON:-/usr/bin/python3}"
[ -n "${HVD_PYTHON:-}" ] || hvd_ensure_packages python3-torch python3-numpy
export PYTHONPATH="$build/python:$hvd_root/python${PYTHONPATH:+:$PYTHONPATH}"
# One intra-op thread per rank, as torchrun gives each of its workers: with
# torch's default (a thread per core in every process) 8 ranks on 16 cores
# ran DDP's bucket copies 30-60x slower than raw Gloo on the GPU machine
# (docs/benchmarks.md). nproc would count that one thread, not the cores.
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

bench_keep_impls() {
  local -n names="$1"
  [ -n "${HVD_BENCH_IMPLS:-}" ] || return 0
  local kept=() name
  for name in "${names[@]}"; do
    if [[ " $HVD_BENCH_IMPLS " == *" $name "* ]]; then kept+=("$name"); fi
  done
  names=("${kept[@]}")
}
