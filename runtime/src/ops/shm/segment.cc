#include "ops/shm/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvd::runtime::shm {

using common::Result;
using common::Status;

namespace {

Status Failure(const std::string& what, const std::string& name, int error) {
  return Status::Internal(what + " shared memory " + name + ": " +
                          std::strerror(error));
}

}  // namespace

Result<std::unique_ptr<Segment>> Segment::Map(int fd, const std::string& name,
                                              size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (data == MAP_FAILED) return Failure("cannot map", name, error);
  return std::unique_ptr<Segment>(
      new Segment(static_cast<uint8_t*>(data), bytes));
}

Result<std::unique_ptr<Segment>> Segment::Create(const std::string& name,
                                                 size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return Failure("cannot create", name, errno);
  // posix_fallocate reports a full tmpfs now; ftruncate alone would
  // succeed and the first touch of a missing page would kill the process.
  const int error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (error != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return Status::ResourceExhausted(
        "cannot reserve " + std::to_string(bytes) + " bytes of shared memory " +
        name + ": " + std::strerror(error) +
        " (is /dev/shm large enough? df -h /dev/shm)");
  }
  return Map(fd, name, bytes);
}

Result<std::unique_ptr<Segment>> Segment::Open(const std::string& name,
                                               size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return Failure("cannot open", name, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return Status::Internal("shared memory " + name + " is " +
                            std::to_string(st.st_size) + " bytes, not " +
                            std::to_string(bytes));
  }
  return Map(fd, name, bytes);
}

void Segment::Unlink(const std::string& name) { shm_unlink(name.c_str()); }

void Segment::UnlinkEarlierGenerations(const std::string& prefix,
                                       int64_t generation) {
  // shm_open's names are files of /dev/shm on Linux (glibc).
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return;
  const std::string bare = prefix.substr(prefix.find_first_not_of('/'));
  while (const dirent* entry = readdir(dir)) {
    const std::string file = entry->d_name;
    if (file.compare(0, bare.size(), bare) != 0) continue;
    char* end = nullptr;
    const long long found = std::strtoll(file.c_str() + bare.size(), &end, 10);
    if (end == file.c_str() + bare.size() || found >= generation) continue;
    shm_unlink(("/" + file).c_str());
  }
  closedir(dir);
}

Segment::~Segment() { munmap(data_, size_); }

}  // namespace hvd::runtime::shm
