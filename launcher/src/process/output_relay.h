// OutputRelay: a thread that copies a worker's output streams to hvdrun's
// own, line by line, each line prefixed "[<rank>]<stdout>:" or
// "[<rank>]<stderr>:" (stdout lines to stdout, stderr lines to stderr), and
// optionally to a file per stream without the prefix. A last line without
// a newline is completed with one.
//
// With --prefix-output-with-timestamp each line starts with the time it was
// read, as horovodrun writes it: "Tue Mar  5 14:03:09 2024[0]<stdout>:text"
// on the terminal, "Tue Mar  5 14:03:09 2024 text" in the file.
//
// The files (--output-filename DIR; docs/design.md, "Output"; opened as
// output_files.h says, so no other user can redirect them): a static
// job writes Horovod's DIR/rank.<rank>/stdout and stderr; an elastic job,
// whose slots get new processes and whose ranks change between
// generations, writes one directory per slot and one pair of files per
// process started there, named after the generation it was started for:
// DIR/<host>.<local_rank>/gen.<G>.stdout and .stderr.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hvd/common/status.h"
#include "job/assignment.h"
#include "job/launch_config.h"
#include "process/output_tail.h"

namespace hvd::launcher {

struct RelayStream {
  int fd = -1;  // read end; the relay closes it at end-of-file
  int rank = 0;
  bool is_stderr = false;
  // Also keeps the stream's last lines here, when set.
  std::shared_ptr<OutputTail> tail;
};

// Where one worker's output goes besides hvdrun's stdout and stderr:
// root/subdir/stdout_name and stderr_name, opened as output_files.h says
// (directories made 0700, no symbolic link followed).
struct OutputFiles {
  std::string root;    // --output-filename
  std::string subdir;  // the worker's directory in it
  std::string stdout_name, stderr_name;
  std::string dir() const { return root + "/" + subdir; }
  std::string stdout_path() const { return dir() + "/" + stdout_name; }
  std::string stderr_path() const { return dir() + "/" + stderr_name; }
};

struct RelayOptions {
  bool timestamp = false;  // --prefix-output-with-timestamp
  std::optional<OutputFiles> files;
};

// The time as horovodrun's --prefix-output-with-timestamp writes it: Python's
// time.asctime(), "Tue Mar  5 14:03:09 2024" (English names whatever the
// locale, the day padded with a space).
std::string AsctimeOf(const std::tm& time);
// The same for `when` in local time.
std::string OutputTimestamp(std::time_t when);

// The files of the worker started in `slot` for `generation` under
// --output-filename `output_dir` (the layout above). Host names keep every
// character but '/', which becomes '_'.
OutputFiles OutputFilesOf(const std::string& output_dir, bool elastic,
                          const SlotAssignment& slot, int64_t generation);

// The relay's options for that worker from hvdrun's settings.
RelayOptions RelayOptionsFor(const LaunchConfig& config,
                             const SlotAssignment& slot, int64_t generation);

// How long hvdrun waits, once its job has ended, for the end of its
// workers' output.
inline constexpr std::chrono::seconds kOutputDrain{5};

class OutputRelay {
 public:
  // Starts the relay thread. Files that cannot be created are reported
  // (spdlog error naming the path) and left out; the output still reaches
  // hvdrun's stdout and stderr, so a worker never blocks on a full pipe.
  // Existing files of the same names are truncated (horovodrun's 'w').
  static common::Result<std::unique_ptr<OutputRelay>> Start(
      std::vector<RelayStream> streams, const RelayOptions& options);
  ~OutputRelay();  // joins
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  // Blocks until every stream reached end-of-file.
  void Join();
  // Waits up to `bound` for every stream's end-of-file; then relays no
  // more of those still open (their last partial line completed) and
  // returns their ranks. A stream outlives its worker only when something
  // the worker started escaped its process group and still holds it; hvdrun
  // must end all the same (kOutputDrain).
  std::vector<int> JoinWithin(std::chrono::milliseconds bound);

 private:
  struct Stream;
  OutputRelay() = default;
  void Run();
  void Emit(Stream* stream, bool eof);

  bool timestamp_ = false;
  std::vector<std::unique_ptr<Stream>> streams_;
  // A byte on wake_[1] stops the relay thread.
  int wake_[2] = {-1, -1};
  std::mutex mu_;
  std::condition_variable ended_;
  bool ended_all_ = false;  // guarded by mu_
  // The ranks of the streams the thread stopped relaying; read after the
  // thread is joined.
  std::vector<int> still_open_;
  std::thread thread_;
};

}  // namespace hvd::launcher
