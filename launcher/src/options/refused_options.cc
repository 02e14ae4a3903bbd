#include "options/refused_options.h"

#include <iterator>

namespace hvd::launcher {

namespace {

constexpr char kNoMpi[] =
    "hvd has no MPI controller: Gloo is its only controller (drop the "
    "option, or use --gloo)";

constexpr RefusedOption kRefused[] = {
    {"--mpi", kNoMpi},
    {"--jsrun",
     "jsrun starts MPI jobs under LSF and hvd has no MPI controller: hvdrun "
     "starts its workers itself, locally or over ssh (give the hosts with "
     "-H or --hostfile)"},
    {"--mpi-args",
     "hvd has no MPI controller, so there is no mpirun to pass arguments to"},
    {"--binding-args",
     "process binding arguments go to mpirun or jsrun, and hvd has no MPI "
     "controller (pin hvd's background thread with --thread-affinity)"},
    {"--mpi-threads-disable",
     "MPI threading applies to the MPI controller only, and hvd has no MPI "
     "controller"},
    {"--no-mpi-threads-disable",
     "MPI threading applies to the MPI controller only, and hvd has no MPI "
     "controller"},
    {"--num-nccl-streams",
     "hvd runs each process set's NCCL collectives on one stream of its own "
     "(docs/gpu.md)"},
};

}  // namespace

const RefusedOption* FindRefusedOption(const std::string& name) {
  for (const auto& refused : kRefused) {
    if (name == refused.name) return &refused;
  }
  return nullptr;
}

const RefusedOption* RefusedOptionsBegin() { return std::begin(kRefused); }
const RefusedOption* RefusedOptionsEnd() { return std::end(kRefused); }

}  // namespace hvd::launcher
