// The files of --output-filename DIR, opened so that no other user of the
// machine can redirect them: another user who can write in DIR (a shared
// /tmp/out, say) could otherwise put a symbolic link where hvdrun writes
// and have it truncate a file of the user's.
//
// So: directories hvdrun makes are 0700; DIR, when it exists already, must
// belong to the user (or root) and be writable by no one else unless its
// sticky bit keeps others from renaming what is in it; a worker's
// directory (DIR/rank.N, DIR/host.L) must belong to the user and be
// writable by no one else; and every step is opened relative to the
// directory opened before it, without following a symbolic link
// (O_NOFOLLOW), so nothing can be swapped in between a check and a use.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "hvd/common/status.h"

namespace hvd::launcher {

// Why a directory with these properties must not hold hvdrun's output
// files, or nullopt when it may. `owner_may_be_root`: for DIR itself,
// which may be a system directory with the sticky bit (/tmp); a worker's
// directory must be the user's own. Pure: tested without files.
std::optional<std::string> UnsafeDirectory(uid_t owner, mode_t mode, uid_t me,
                                           bool owner_may_be_root);

// An output file opened for writing, truncated (horovodrun's 'w'), and
// the descriptor's owner: closes it.
class OutputFile {
 public:
  OutputFile() = default;
  explicit OutputFile(int fd) : fd_(fd) {}
  ~OutputFile();
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  // Writes all of `text`; after a failure the file is closed (the output
  // still reaches hvdrun's own streams).
  void Write(const char* data, size_t size);

 private:
  int fd_ = -1;
};

// Opens `root`/`subdir`/`name` for a worker's stream by the rules above,
// making `root` (and its missing parents) and `subdir` 0700 when they do
// not exist. Errors name the path and why (kInvalidArgument).
common::Result<OutputFile> OpenOutputFile(const std::string& root,
                                          const std::string& subdir,
                                          const std::string& name);

}  // namespace hvd::launcher
