#include "tuning/timeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

namespace hvd::runtime {
namespace {

using nlohmann::json;

// What every trace this class writes looks like when it has no event yet,
// and how it ends once it has.
constexpr char kEmptyTrace[] = "[\n]\n";
constexpr char kTail[] = "\n]\n";
constexpr int64_t kTailSize = sizeof(kTail) - 1;
constexpr char kHead[] = "[\n{";
constexpr char kEventsTail[] = "}\n]\n";

common::Status FileError(const std::string& path, const std::string& what,
                         int error) {
  std::string message =
      "timeline file '" + path + "': " + what + ": " + std::strerror(error);
  if (error == ENOSPC || error == EDQUOT || error == EFBIG) {
    return common::Status::ResourceExhausted(std::move(message));
  }
  return common::Status::InvalidArgument(std::move(message));
}

// Reads exactly `size` bytes at `offset`; false with errno set on error,
// with errno 0 on a short file.
bool ReadAt(int fd, int64_t offset, char* buffer, size_t size) {
  while (size > 0) {
    ssize_t n = ::pread(fd, buffer, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    buffer += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

// Writes all of `size` bytes at `offset`; false with errno set on error.
bool WriteAt(int fd, int64_t offset, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

// Invalid UTF-8 in a tensor name becomes U+FFFD rather than an exception.
std::string Dump(const json& event) {
  return event.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Takes a "process_name" line of an existing trace into `rows`.
void TakeRow(const std::string& line,
             std::unordered_map<std::string, int64_t>* rows,
             int64_t* next_row) {
  if (line.find("\"process_name\"") == std::string::npos) return;
  size_t end = line.size();
  if (end > 0 && line[end - 1] == ',') --end;
  json event = json::parse(line.begin(), line.begin() + end, nullptr,
                           /*allow_exceptions=*/false);
  if (!event.is_object() || event.value("ph", "") != "M" ||
      event.value("name", "") != "process_name") {
    return;
  }
  auto pid = event.find("pid");
  auto args = event.find("args");
  if (pid == event.end() || !pid->is_number_integer() || args == event.end() ||
      !args->is_object()) {
    return;
  }
  auto name = args->find("name");
  if (name == args->end() || !name->is_string()) return;
  int64_t id = pid->get<int64_t>();
  rows->emplace(name->get<std::string>(), id);
  *next_row = std::max(*next_row, id + 1);
}

}  // namespace

common::Result<std::unique_ptr<Timeline>> Timeline::Open(
    const std::string& path, bool mark_cycles) {
  // Never O_TRUNC: an existing trace is continued, anything else refused.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(path, "cannot open for writing", errno);
  auto fail = [&](common::Status status) {
    ::close(fd);
    return status;
  };
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail(FileError(path, "fstat", errno));
  if (!S_ISREG(st.st_mode)) {
    return fail(common::Status::InvalidArgument("timeline file '" + path +
                                                "' is not a regular file"));
  }
  int64_t size = st.st_size;
  if (size == 0) {
    // New (or created empty by someone else): start an empty trace.
    if (!WriteAt(fd, 0, kEmptyTrace, sizeof(kEmptyTrace) - 1)) {
      return fail(FileError(path, "cannot write", errno));
    }
    size = sizeof(kEmptyTrace) - 1;
  } else {
    bool ours = false;
    if (size == static_cast<int64_t>(sizeof(kEmptyTrace) - 1)) {
      char all[sizeof(kEmptyTrace) - 1];
      if (!ReadAt(fd, 0, all, sizeof(all))) {
        return fail(FileError(path, "cannot read", errno));
      }
      ours = std::memcmp(all, kEmptyTrace, sizeof(all)) == 0;
    } else if (size >= static_cast<int64_t>(sizeof(kHead) - 1 +
                                            sizeof(kEventsTail) - 1)) {
      char head[sizeof(kHead) - 1];
      char tail[sizeof(kEventsTail) - 1];
      if (!ReadAt(fd, 0, head, sizeof(head)) ||
          !ReadAt(fd, size - static_cast<int64_t>(sizeof(tail)), tail,
                  sizeof(tail))) {
        return fail(FileError(path, "cannot read", errno));
      }
      ours = std::memcmp(head, kHead, sizeof(head)) == 0 &&
             std::memcmp(tail, kEventsTail, sizeof(tail)) == 0;
    }
    if (!ours) {
      return fail(common::Status::InvalidArgument(
          "timeline file '" + path +
          "' exists and is not a complete trace written by hvd (which "
          "starts with \"[\" and ends with \"]\" on lines of their own); "
          "refusing to overwrite it"));
    }
  }
  return std::unique_ptr<Timeline>(new Timeline(path, fd, size, mark_cycles));
}

Timeline::Timeline(std::string path, int fd, int64_t size, bool mark_cycles)
    : path_(std::move(path)),
      fd_(fd),
      mark_cycles_(mark_cycles),
      steady_base_(std::chrono::steady_clock::now()),
      wall_base_us_(std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count()),
      size_(size),
      empty_(size == static_cast<int64_t>(sizeof(kEmptyTrace) - 1)),
      existing_size_(empty_ ? 0 : size),
      writer_([this] { WriterLoop(); }) {}

Timeline::~Timeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  writer_.join();
  WriteOut();  // an error was logged there
  ::close(fd_);
}

int64_t Timeline::NowMicros() const {
  return wall_base_us_ + std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now() - steady_base_)
                             .count();
}

void Timeline::Begin(const std::string& tensor, const std::string& activity) {
  Record({'B', 'p', tensor, activity, NowMicros(), json()});
}

void Timeline::Begin(const std::string& tensor, const std::string& activity,
                     json args) {
  Record({'B', 'p', tensor, activity, NowMicros(), std::move(args)});
}

void Timeline::End(const std::string& tensor) {
  Record({'E', 'p', tensor, std::string(), NowMicros(), json()});
}

void Timeline::Instant(const std::string& tensor, const std::string& what) {
  Record({'i', 'p', tensor, what, NowMicros(), json()});
}

void Timeline::MarkCycle() {
  if (!mark_cycles_) return;
  Record({'i', 'g', std::string(), kMarkCycleStart, NowMicros(), json()});
}

void Timeline::MarkGeneration(int64_t generation, int size,
                              const std::vector<std::string>& hosts,
                              const std::string& reason) {
  std::string name = "generation " + std::to_string(generation) + ": " +
                     std::to_string(size) + (size == 1 ? " rank" : " ranks");
  json args{{"generation", generation},
            {"size", size},
            {"hosts", hosts},
            {"reason", reason}};
  Record({'i', 'g', kMembershipRow, std::move(name), NowMicros(),
          std::move(args)});
}

void Timeline::Record(Event event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!recording_) return;
  if (pending_.size() >= kMaxPendingEvents) {
    if (dropped_++ == 0) {
      spdlog::warn(
          "timeline {}: {} events wait to be written; dropping new ones until "
          "the writer catches up",
          path_, pending_.size());
    }
    return;
  }
  pending_.push_back(std::move(event));
}

common::Status Timeline::Flush() { return WriteOut(); }

void Timeline::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, kFlushInterval, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    WriteOut();  // an error was logged there
    lock.lock();
  }
}

common::Status Timeline::WriteOut() {
  std::lock_guard<std::mutex> io(io_mu_);
  if (!write_error_.ok()) return write_error_;
  std::vector<Event> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events.swap(pending_);
  }
  if (events.empty()) return common::Status::Ok();
  common::Status status = LoadRows();
  if (status.ok()) status = Append(Serialize(events));
  if (!status.ok()) {
    write_error_ = status;
    spdlog::error("{}; the timeline stops recording, training goes on",
                  status.message());
    std::lock_guard<std::mutex> lock(mu_);
    recording_ = false;
    pending_.clear();
  }
  return status;
}

common::Status Timeline::LoadRows() {
  if (rows_loaded_) return common::Status::Ok();
  // Our events are one a line, so the lines that name a row can be parsed
  // one by one without holding the whole file.
  std::string line;
  std::vector<char> chunk(1 << 20);
  for (int64_t offset = 0; offset < existing_size_;) {
    size_t n = static_cast<size_t>(
        std::min<int64_t>(existing_size_ - offset, chunk.size()));
    if (!ReadAt(fd_, offset, chunk.data(), n)) {
      return FileError(path_, "cannot read the existing trace",
                       errno != 0 ? errno : EIO);
    }
    offset += static_cast<int64_t>(n);
    for (size_t i = 0; i < n; ++i) {
      if (chunk[i] != '\n') {
        line.push_back(chunk[i]);
        continue;
      }
      TakeRow(line, &rows_, &next_row_);
      line.clear();
    }
  }
  TakeRow(line, &rows_, &next_row_);
  rows_loaded_ = true;
  return common::Status::Ok();
}

std::string Timeline::Serialize(const std::vector<Event>& events) {
  std::string text = empty_ ? "\n" : ",\n";
  bool first = true;
  auto add = [&](const json& event) {
    if (!first) text += ",\n";
    first = false;
    text += Dump(event);
  };
  for (const Event& e : events) {
    int64_t row = 0;
    if (!e.tensor.empty()) {
      auto [it, added] = rows_.try_emplace(e.tensor, next_row_);
      if (added) {
        ++next_row_;
        add(json{{"name", "process_name"},
                 {"ph", "M"},
                 {"pid", it->second},
                 {"tid", 0},
                 {"args", {{"name", e.tensor}}}});
      }
      row = it->second;
    }
    json event{
        {"ph", std::string(1, e.ph)}, {"ts", e.ts}, {"pid", row}, {"tid", 0}};
    if (!e.name.empty()) event["name"] = e.name;
    if (e.ph == 'i') event["s"] = std::string(1, e.scope);
    if (!e.args.is_null()) event["args"] = e.args;
    add(event);
  }
  text += kTail;
  return text;
}

common::Status Timeline::Append(const std::string& text) {
  const int64_t offset = size_ - kTailSize;
  if (WriteAt(fd_, offset, text.data(), text.size())) {
    size_ = offset + static_cast<int64_t>(text.size());
    empty_ = false;
    return common::Status::Ok();
  }
  const int error = errno;
  // Part of the batch may have landed over the tail: put the last complete
  // batch's end back.
  if (::ftruncate(fd_, offset) != 0 ||
      !WriteAt(fd_, offset, kTail, kTailSize)) {
    spdlog::error("timeline {}: could not restore the trace's end: {}", path_,
                  std::strerror(errno));
  }
  return FileError(path_,
                   "cannot write " + std::to_string(text.size()) +
                       " bytes at offset " + std::to_string(offset),
                   error);
}

}  // namespace hvd::runtime
