// OutputRelay: one thread that copies every worker's output to hvdrun's own,
// line by line, each line prefixed "[<rank>]<stdout>:" or "[<rank>]<stderr>:"
// (stdout lines to stdout, stderr lines to stderr), and optionally to
// DIR/rank.<rank>/stdout and stderr without the prefix. A last line without
// a newline is completed with one.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hvd/common/status.h"
#include "output_tail.h"

namespace hvd::launcher {

struct RelayStream {
  int fd = -1;  // read end; the relay closes it at end-of-file
  int rank = 0;
  bool is_stderr = false;
  // Also keeps the stream's last lines here, when set.
  std::shared_ptr<OutputTail> tail;
};

class OutputRelay {
 public:
  // Starts the relay thread. With a non-empty output_dir, creates
  // output_dir/rank.<rank>/ for every rank first.
  static common::Result<std::unique_ptr<OutputRelay>> Start(
      std::vector<RelayStream> streams, const std::string& output_dir);
  ~OutputRelay();  // joins
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  // Blocks until every stream reached end-of-file.
  void Join();

 private:
  struct Stream;
  OutputRelay() = default;
  void Run();

  std::vector<std::unique_ptr<Stream>> streams_;
  std::thread thread_;
};

}  // namespace hvd::launcher
