// What the runtime's parts know about each collective apart from how it
// runs: its names, its timeline activities and what the ranks must agree
// on, one row per OpType (op_info.cc). How each runs, its executors, is the
// op table's (ops/op_table.h), above this folder; adding a collective is a
// row in each.
#pragma once

#include <array>
#include <cstddef>

#include "hvd/runtime/types.h"

namespace hvd::runtime {

// What every rank's request for one tensor must match, besides its name
// and group (coordinator.cc checks each and names the ranks that differ).
enum class Agreement {
  kReduction,  // data type, reduce op, pre- and postscale, shape
  kRows,       // data type, the shape after dimension 0
  kRoot,       // data type, root rank, shape
  kRanks,      // the ranks of a process set to add
  kSetId,      // the id of a process set to remove
  kNothing,
};

struct OpInfo {
  OpType type;
  const char* name;                // Python's and the logs' name
  const char* activity;            // tuning/timeline.h
  const char* negotiate_activity;  // tuning/timeline.h
  Agreement agreement;
  // Moves tensor data: counted in bytes, and its responses may be cached.
  bool payload;
  // Splits or concatenates along dimension 0, so it needs one.
  bool needs_rows;
  // Runs while some ranks have joined (those contribute zeros or take
  // part), as in Horovod; it refuses the others then.
  bool runs_with_joined_ranks;
};

const OpInfo& OpInfoOf(OpType type);

// Whether `rows` has one row per OpType, in OpType's order (each row's
// `type`): the op tables look a row up by its index.
template <typename Row, size_t N>
constexpr bool InOpTypeOrder(const std::array<Row, N>& rows) {
  if (N != static_cast<size_t>(kOpTypeCount)) return false;
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(rows[i].type) != i) return false;
  }
  return true;
}

}  // namespace hvd::runtime
