// Timeline: the Chrome-trace writer behind HOROVOD_TIMELINE and
// hvd.start_timeline(). Rank 0's background thread records, per tensor, the
// negotiation, the queue, the fusion-buffer copies and the collective; a
// thread owned by the Timeline writes them to the file. Open the file in
// Perfetto (ui.perfetto.dev) or chrome://tracing.
//
// File format: Chrome's "JSON Array Format", one event object a line:
//
//   [
//   {"args":{"name":"grad.0"},"name":"process_name","ph":"M","pid":1,"tid":0},
//   {"name":"NEGOTIATE_ALLREDUCE","ph":"B","pid":1,"tid":0,"ts":1716...},
//   ...
//   ]
//
// - Rows: each tensor name gets a row id, used as the event's pid (Horovod's
//   layout), announced by a "process_name" metadata event before the row's
//   first event. Ids start at 1; pid 0 holds the global cycle marks. The
//   row named "membership" holds MarkGeneration()'s events (a tensor of
//   that name would share it).
// - Always valid JSON: the file always ends with "\n]\n". A batch of events
//   is appended with one pwrite that overwrites that tail with
//   ",\n{...},\n{...}\n]\n", so after any completed flush the file parses,
//   even if the process is SIGKILLed right after. If a write fails, the
//   file is cut back to the last complete batch (best effort). The one
//   window left is a kill during a write (microseconds every
//   kFlushInterval): Linux may stop a write at a page boundary, leaving a
//   torn last batch, which Open() then refuses; only rewriting the whole
//   file and renaming it would close that window.
// - Reopening appends: Open() on an existing file continues it and never
//   truncates (a new elastic generation, a second start_timeline()). A
//   non-empty file that does not start with "[\n{" and end with "}\n]\n" (or
//   is not exactly "[\n]\n") was not written by this class and is refused,
//   untouched. An empty file is taken as a new trace.
// - Row ids across reopens: a tensor keeps its row. Before its first write
//   a reopened Timeline reads the existing file once (on the writer thread,
//   or in Flush()/the destructor, whichever writes first), takes the
//   process_name events as the name -> id table and gives new names ids
//   above the largest one found. So one tensor's events of every generation
//   line up on one row, and two names never share a row.
// - Timestamps ("ts", microseconds): the wall clock (system_clock since the
//   Unix epoch) read once at Open(), plus the steady clock's time elapsed
//   since. Within one Timeline they never go back; a later generation's
//   events come after an earlier one's unless the wall clock was set back
//   in between.
//
// Threads: Begin/End/Instant/MarkCycle may be called from any thread (in
// practice the background thread); they take a mutex, append to a buffer
// and return, with no file I/O. The writer thread writes the buffer every
// kFlushInterval; Flush() and the destructor write on the caller's thread.
// Lock order: io_mu_ before mu_.
//
// Errors: Open() fails (kInvalidArgument naming the path and the cause)
// when the file cannot be opened or created, or exists and is not such a
// trace. A later read or write error (kResourceExhausted when out of space,
// else kInvalidArgument) is logged once; the Timeline then drops everything
// recorded and Flush() returns that error. Training never stops for it.
// At most kMaxPendingEvents wait to be written; more are dropped with one
// warning.
//
// WARNING: one Timeline per file at a time. Two live Timelines on the same
// path (in one process or two) interleave their writes and break the file;
// destroy the old one before opening the path again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "hvd/common/status.h"

namespace hvd::runtime {

// Activity names, as Horovod's timeline spells them.
inline constexpr char kActivityQueue[] = "QUEUE";
inline constexpr char kActivityMemcpyInFusionBuffer[] =
    "MEMCPY_IN_FUSION_BUFFER";
inline constexpr char kActivityMemcpyOutFusionBuffer[] =
    "MEMCPY_OUT_FUSION_BUFFER";
// The collectives (negotiation/op_info.h names each op's).
inline constexpr char kActivityAllreduce[] = "ALLREDUCE";
inline constexpr char kActivityAllgather[] = "ALLGATHER";
inline constexpr char kActivityBroadcast[] = "BROADCAST";
// Collectives of CUDA tensors.
inline constexpr char kActivityNcclAllreduce[] = "NCCL_ALLREDUCE";
inline constexpr char kActivityNcclAllgather[] = "NCCL_ALLGATHER";
inline constexpr char kActivityNcclReducescatter[] = "NCCL_REDUCESCATTER";
inline constexpr char kActivityBarrier[] = "BARRIER";
inline constexpr char kActivityAlltoall[] = "ALLTOALL";
inline constexpr char kActivityReducescatter[] = "REDUCESCATTER";
inline constexpr char kActivityJoin[] = "JOIN";
inline constexpr char kActivityAddProcessSet[] = "ADD_PROCESS_SET";
inline constexpr char kActivityRemoveProcessSet[] = "REMOVE_PROCESS_SET";
// Their negotiations.
inline constexpr char kActivityNegotiateAllreduce[] = "NEGOTIATE_ALLREDUCE";
inline constexpr char kActivityNegotiateAllgather[] = "NEGOTIATE_ALLGATHER";
inline constexpr char kActivityNegotiateBroadcast[] = "NEGOTIATE_BROADCAST";
inline constexpr char kActivityNegotiateBarrier[] = "NEGOTIATE_BARRIER";
inline constexpr char kActivityNegotiateAlltoall[] = "NEGOTIATE_ALLTOALL";
inline constexpr char kActivityNegotiateReducescatter[] =
    "NEGOTIATE_REDUCESCATTER";
inline constexpr char kActivityNegotiateJoin[] = "NEGOTIATE_JOIN";
inline constexpr char kActivityNegotiateAddProcessSet[] =
    "NEGOTIATE_ADD_PROCESS_SET";
inline constexpr char kActivityNegotiateRemoveProcessSet[] =
    "NEGOTIATE_REMOVE_PROCESS_SET";
// The global instant MarkCycle() writes.
inline constexpr char kMarkCycleStart[] = "CYCLE_START";
// The row of MarkGeneration()'s instants.
inline constexpr char kMembershipRow[] = "membership";

class Timeline {
 public:
  static constexpr std::chrono::milliseconds kFlushInterval{100};
  static constexpr size_t kMaxPendingEvents = size_t{1} << 20;

  // Opens the trace at `path`, creating it or continuing one this class
  // wrote (see the top of this file), and starts the writer thread.
  // `mark_cycles` makes MarkCycle() record.
  static common::Result<std::unique_ptr<Timeline>> Open(const std::string& path,
                                                        bool mark_cycles);

  // Stops the writer thread, writes what is left (errors are logged) and
  // closes the file.
  ~Timeline();

  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Starts `activity` ("B") on the tensor's row; spans nest, End() closes
  // the innermost one.
  void Begin(const std::string& tensor, const std::string& activity);
  // The same with `args` shown in the viewer's details (an object).
  void Begin(const std::string& tensor, const std::string& activity,
             nlohmann::json args);
  // Ends the tensor's innermost open activity ("E").
  void End(const std::string& tensor);
  // An instant ("i") on the tensor's row, e.g. the rank that became ready
  // during negotiation: Instant(name, "1").
  void Instant(const std::string& tensor, const std::string& what);
  // A global instant named CYCLE_START across all rows; a no-op unless
  // opened with mark_cycles.
  void MarkCycle();
  // A global instant ("s":"g") on the "membership" row: generation
  // `generation` began with `size` ranks on `hosts` ("a:2", rank order)
  // because of `reason`. Named "generation 3: 4 ranks"; its args hold the
  // four values. One per generation (the runtime calls it when rank 0's
  // runtime of a generation starts its timeline), so an elastic job's
  // trace shows where each membership began.
  void MarkGeneration(int64_t generation, int size,
                      const std::vector<std::string>& hosts,
                      const std::string& reason);

  // Writes everything recorded before the call; the file is then valid
  // JSON. Returns the first write error, which sticks.
  common::Status Flush();

  const std::string& path() const { return path_; }

 private:
  struct Event {
    char ph;             // 'B', 'E' or 'i'
    char scope;          // of an 'i': 'g' (global) or 'p' (its row)
    std::string tensor;  // the row's name; empty: row 0 (the cycle marks)
    std::string name;    // the activity; empty for 'E'
    int64_t ts;
    nlohmann::json args;  // null: none
  };

  Timeline(std::string path, int fd, int64_t size, bool mark_cycles);

  int64_t NowMicros() const;
  void Record(Event event);
  void WriterLoop();
  // Writes the buffer; the one path to the file after Open().
  common::Status WriteOut();
  // Reads the row ids of the file's existing part (a reopened trace).
  common::Status LoadRows();
  // The events as the bytes that replace the file's tail.
  std::string Serialize(const std::vector<Event>& events);
  // Writes `text` over the tail; on failure cuts back to the last batch.
  common::Status Append(const std::string& text);

  const std::string path_;
  const int fd_;
  const bool mark_cycles_;
  const std::chrono::steady_clock::time_point steady_base_;
  const int64_t wall_base_us_;

  // The file's state: used by whoever writes (writer thread, Flush, the
  // destructor), one at a time.
  std::mutex io_mu_;
  int64_t size_;                // guarded by io_mu_
  bool empty_;                  // no event yet; guarded by io_mu_
  int64_t existing_size_;       // bytes to read by LoadRows; guarded by io_mu_
  bool rows_loaded_ = false;    // guarded by io_mu_
  int64_t next_row_ = 1;        // guarded by io_mu_
  common::Status write_error_;  // sticky; guarded by io_mu_
  std::unordered_map<std::string, int64_t> rows_;  // guarded by io_mu_

  // The buffer between the recording threads and the writers.
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Event> pending_;  // guarded by mu_
  bool recording_ = true;       // false after a write error; guarded by mu_
  bool stop_ = false;           // guarded by mu_
  uint64_t dropped_ = 0;        // guarded by mu_

  std::thread writer_;  // last: starts after everything above is built
};

// The current timeline, if any, shared by the thread that starts and stops
// it and the background thread that records into it.
class TimelineSlot {
 public:
  std::shared_ptr<Timeline> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return timeline_;
  }
  void Set(std::shared_ptr<Timeline> timeline) {
    std::lock_guard<std::mutex> lock(mu_);
    timeline_ = std::move(timeline);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<Timeline> timeline_;
};

}  // namespace hvd::runtime
