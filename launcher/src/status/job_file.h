// Job files: how `hvdrun status` without a URL finds the jobs running on
// this machine. Each hvdrun writes one file (its pid, its status URL with
// the read token, its command) into a directory only its user can enter,
// and removes it when it ends; a file whose hvdrun is gone is removed by
// the next reader.
//
// The directory is $XDG_RUNTIME_DIR/hvd when that is set, else
// /tmp/hvd-<uid>. A directory there that is not this user's, or that
// others may write, is refused: its files could point anywhere.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::launcher {

struct JobFile {
  pid_t pid = 0;
  std::string url;
  std::string command;
  int64_t started_ms = 0;
  // The kernel's start time of the process (/proc/PID/stat, clock ticks
  // since boot): pids are reused (32768 of them on a busy machine), so a
  // file names its hvdrun by pid and start time together. 0: unknown.
  int64_t process_start = 0;
};

// The start time and whether the process is a zombie, from the text of
// /proc/PID/stat; nullopt for text that is not such a line.
struct ProcessStat {
  char state = '?';
  int64_t start = 0;
};
std::optional<ProcessStat> ParseProcessStat(const std::string& text);

// Whether JOB's hvdrun still runs: its pid lives, is no zombie, and started
// when the file says.
bool StillRuns(const JobFile& job);

// Whether JOB's file is still there. hvdrun removes it before its status
// server stops answering, so a job whose file is gone has ended, though its
// process may still be exiting.
bool StillListed(const JobFile& job);

// This process's start time (0 when /proc cannot tell).
int64_t OwnProcessStart();

std::string JobFileDirectory();

// Writes this process's file; returns its path.
common::Result<std::string> WriteJobFile(const JobFile& job);
void RemoveJobFile(const std::string& path);

// The jobs whose hvdrun still runs, oldest first.
common::Result<std::vector<JobFile>> RunningJobs();

}  // namespace hvd::launcher
