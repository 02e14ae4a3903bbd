// RankLayout: where one worker sits in a job of one generation, in
// Horovod's terms. The launcher computes it (launcher/src/job/assignment.h),
// the elastic check-in carries it (hvd/rendezvous/worker_assignment.h, whose
// JSON keeps these names) and the runtime reads it (hvd/runtime/config.h).
// A plain value; the defaults are one worker alone.
#pragma once

namespace hvd::common {

struct RankLayout {
  // Global rank and job size.
  int rank = 0;
  int size = 1;
  // Rank among the workers on this host, and how many run there.
  int local_rank = 0;
  int local_size = 1;
  // This host's index among the hosts that run a rank with the same
  // local_rank, and how many such hosts there are (Horovod's definition).
  int cross_rank = 0;
  int cross_size = 1;
};

}  // namespace hvd::common
