#include "process/spawner.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <set>

#include "process/guard.h"

extern char** environ;

namespace hvd::launcher {

using common::Result;
using common::Status;

Result<std::string> SelfExecutable() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) {
    return Status::Internal(std::string("cannot read /proc/self/exe: ") +
                            std::strerror(errno));
  }
  return std::string(path, static_cast<size_t>(n));
}

namespace {

// A memory file holding `text`, read from its start, at a descriptor above
// the ones the child's dup2s target.
Result<int> MemoryFile(const std::string& text) {
  int fd = memfd_create("hvd-launch", MFD_CLOEXEC);
  if (fd < 0) {
    return Status::Internal(std::string("memfd_create: ") +
                            std::strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return Status::Internal(std::string("writing the launch message: ") +
                              std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  int high = fcntl(fd, F_DUPFD_CLOEXEC, kGuardLaunchFd + 1);
  close(fd);
  if (high < 0) return Status::Internal("cannot move the launch message");
  return high;
}

}  // namespace

Result<WorkerProcess> SpawnGuard(const SlotAssignment& slot,
                                 const std::vector<std::string>& argv,
                                 const EnvList& env,
                                 const std::string& launch_message) {
  // Everything the child needs is built before fork.
  std::vector<std::string> env_strings;
  std::set<std::string> overridden;
  for (const auto& [name, value] : env) {
    env_strings.push_back(name + "=" + value);
    overridden.insert(name);
  }
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    if (overridden.count(text.substr(0, text.find('='))) == 0) {
      env_strings.push_back(std::move(text));
    }
  }
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int launch = -1;
  if (!launch_message.empty()) {
    auto memory = MemoryFile(launch_message);
    if (!memory.ok()) return memory.status();
    launch = *memory;
  }
  int control[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd :
         {control[0], control[1], out[0], out[1], err[0], err[1], launch}) {
      if (fd >= 0) close(fd);
    }
  };
  if (pipe2(control, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0) {
    Status status =
        Status::Internal(std::string("pipe: ") + std::strerror(errno));
    close_all();
    return status;
  }
  pid_t pid = fork();
  if (pid < 0) {
    Status status =
        Status::Internal(std::string("fork: ") + std::strerror(errno));
    close_all();
    return status;
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    dup2(control[0], kGuardControlFd);  // dup2 clears close-on-exec
    if (launch >= 0) dup2(launch, kGuardLaunchFd);
    syscall(SYS_close_range,
            launch >= 0 ? kGuardLaunchFd + 1 : kGuardControlFd + 1, ~0U, 0);
    execve(args[0], args.data(), envp.data());
    static const char kMessage[] = "hvdrun: cannot exec the worker guard\n";
    ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    (void)ignored;
    _exit(127);
  }
  close(control[0]);
  close(out[1]);
  close(err[1]);
  if (launch >= 0) close(launch);
  WorkerProcess worker;
  worker.slot = slot;
  worker.pid = pid;
  worker.control_fd = control[1];
  worker.stdout_fd = out[0];
  worker.stderr_fd = err[0];
  return worker;
}

}  // namespace hvd::launcher
