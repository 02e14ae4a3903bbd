// A POSIX shared-memory segment mapped into this process. Local rank 0
// creates it under a name only the job's workers can derive; the others
// open it; every rank unlinks the name as soon as all have mapped it, so
// from then on the memory lives exactly as long as some mapping does and
// nothing is left in /dev/shm whichever process dies, however.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "hvd/common/status.h"

namespace hvd::runtime::shm {

class Segment {
 public:
  // Creates a new segment of `bytes` (reserving the memory now: a full
  // /dev/shm is an error here, not a SIGBUS later) and maps it.
  static common::Result<std::unique_ptr<Segment>> Create(
      const std::string& name, size_t bytes);
  // Maps an existing one, which must be `bytes` long.
  static common::Result<std::unique_ptr<Segment>> Open(const std::string& name,
                                                       size_t bytes);
  // Removes the name (the mappings stay); a name already gone is fine.
  static void Unlink(const std::string& name);
  // Removes every name in /dev/shm that starts with `prefix` and whose
  // generation (the number after `prefix`) is below `generation`: a
  // segment an earlier generation of this job left when a worker died
  // between creating and unlinking it.
  static void UnlinkEarlierGenerations(const std::string& prefix,
                                       int64_t generation);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  // Maps `fd` (and closes it).
  static common::Result<std::unique_ptr<Segment>> Map(int fd,
                                                      const std::string& name,
                                                      size_t bytes);
  Segment(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  size_t size_;
};

}  // namespace hvd::runtime::shm
