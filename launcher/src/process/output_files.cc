#include "process/output_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

std::string Octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode));
  return text;
}

// A descriptor closed at the end of its scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

Status Refused(const std::string& path, const std::string& why) {
  return Status::InvalidArgument(path + ": " + why);
}

// The directory open at `fd` passes UnsafeDirectory.
Status CheckDirectory(int fd, const std::string& path, bool owner_may_be_root) {
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    return Refused(path,
                   std::string("cannot stat it: ") + std::strerror(errno));
  }
  auto unsafe =
      UnsafeDirectory(info.st_uid, info.st_mode, geteuid(), owner_may_be_root);
  return unsafe ? Refused(path, *unsafe) : Status::Ok();
}

// The directory `path` (the user's, followed as given), made 0700 with
// its missing parents; then checked.
Status OpenRoot(const std::string& path, Fd& dir) {
  dir.fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd < 0 && errno == ENOENT) {
    // mkdir -p, 0700 for what it makes (the umask can only take away).
    for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
      const std::string part = path.substr(0, slash);
      if (!part.empty() && mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
        return Refused(
            part, std::string("cannot create it: ") + std::strerror(errno));
      }
      if (slash == std::string::npos) break;
    }
    dir.fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (dir.fd < 0) {
    return Refused(path,
                   std::string("cannot create it: ") + std::strerror(errno));
  }
  return CheckDirectory(dir.fd, path, true);
}

// `name` in `parent`, a directory of the user's alone, made 0700 if it is
// not there; never a symbolic link.
Status OpenWorkerDirectory(int parent, const std::string& path,
                           const std::string& name, Fd& dir) {
  if (mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) {
    return Refused(path,
                   std::string("cannot create it: ") + std::strerror(errno));
  }
  dir.fd = openat(parent, name.c_str(),
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  // With O_DIRECTORY a link is ENOTDIR (Linux) or ELOOP: ask which.
  struct stat link {};
  if (dir.fd < 0 && (errno == ELOOP || errno == ENOTDIR) &&
      fstatat(parent, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(link.st_mode)) {
    return Refused(path,
                   "a symbolic link, not a directory (someone else may have "
                   "put it there): not followed");
  }
  if (dir.fd < 0) {
    return Refused(path,
                   std::string("cannot open it: ") + std::strerror(errno));
  }
  return CheckDirectory(dir.fd, path, false);
}

}  // namespace

std::optional<std::string> UnsafeDirectory(uid_t owner, mode_t mode, uid_t me,
                                           bool owner_may_be_root) {
  if (owner != me && !(owner_may_be_root && owner == 0)) {
    return "it belongs to uid " + std::to_string(owner) +
           ", not to this user (uid " + std::to_string(me) +
           "), who could replace the files hvdrun writes there";
  }
  if ((mode & (S_IWGRP | S_IWOTH)) != 0 && (mode & S_ISVTX) == 0) {
    return "others may write in it (mode " + Octal(mode & 07777) +
           ", no sticky bit), and so replace the files hvdrun writes there "
           "with links elsewhere; chmod go-w it, or choose another directory";
  }
  return std::nullopt;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) close(fd_);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void OutputFile::Write(const char* data, size_t size) {
  while (fd_ >= 0 && size > 0) {
    ssize_t n = write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd_);
      fd_ = -1;
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

Result<OutputFile> OpenOutputFile(const std::string& root,
                                  const std::string& subdir,
                                  const std::string& name) {
  Fd top, worker;
  Status opened = OpenRoot(root, top);
  if (!opened.ok()) return opened;
  const std::string dir_path = root + "/" + subdir;
  opened = OpenWorkerDirectory(top.fd, dir_path, subdir, worker);
  if (!opened.ok()) return opened;
  const std::string path = dir_path + "/" + name;
  // O_NOFOLLOW: a link in its place is refused, not written through.
  int fd = openat(worker.fd, name.c_str(),
                  O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY |
                      O_NONBLOCK | O_CLOEXEC,
                  0666);
  if (fd < 0 && errno == ELOOP) {
    return Refused(path, "a symbolic link (not followed)");
  }
  if (fd < 0) {
    return Refused(path,
                   std::string("cannot write it: ") + std::strerror(errno));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return Refused(path, "not a regular file");
  }
  // O_NONBLOCK was for the open alone (a FIFO must not hold it).
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return OutputFile(fd);
}

}  // namespace hvd::launcher
