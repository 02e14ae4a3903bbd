#include "process/output_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "process/output_files.h"

namespace hvd::launcher {

struct OutputRelay::Stream {
  RelayStream source;
  std::string prefix;
  std::string pending;  // bytes after the last newline
  OutputFile file;      // not open: none, or it failed
};

std::string AsctimeOf(const std::tm& time) {
  static const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed",
                                      "Thu", "Fri", "Sat"};
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr",
                                        "May", "Jun", "Jul", "Aug",
                                        "Sep", "Oct", "Nov", "Dec"};
  const int day = time.tm_wday >= 0 && time.tm_wday < 7 ? time.tm_wday : 0;
  const int month = time.tm_mon >= 0 && time.tm_mon < 12 ? time.tm_mon : 0;
  char text[64];
  std::snprintf(text, sizeof(text), "%s %s %2d %02d:%02d:%02d %d", kDays[day],
                kMonths[month], time.tm_mday, time.tm_hour, time.tm_min,
                time.tm_sec, time.tm_year + 1900);
  return text;
}

std::string OutputTimestamp(std::time_t when) {
  std::tm local{};
  localtime_r(&when, &local);
  return AsctimeOf(local);
}

OutputFiles OutputFilesOf(const std::string& output_dir, bool elastic,
                          const SlotAssignment& slot, int64_t generation) {
  OutputFiles files;
  files.root = output_dir;
  if (!elastic) {
    // Horovod's layout: the rank padded to the width of the largest one
    // (rank.07 of 12).
    const std::string largest =
        std::to_string(std::max(slot.layout.size - 1, 0));
    std::string rank = std::to_string(slot.layout.rank);
    if (rank.size() < largest.size()) {
      rank.insert(0, largest.size() - rank.size(), '0');
    }
    files.subdir = "rank." + rank;
    files.stdout_name = "stdout";
    files.stderr_name = "stderr";
    return files;
  }
  std::string host = slot.host;
  for (char& c : host) {
    if (c == '/') c = '_';
  }
  files.subdir = host + "." + std::to_string(slot.layout.local_rank);
  const std::string base = "gen." + std::to_string(generation);
  files.stdout_name = base + ".stdout";
  files.stderr_name = base + ".stderr";
  return files;
}

RelayOptions RelayOptionsFor(const LaunchConfig& config,
                             const SlotAssignment& slot, int64_t generation) {
  RelayOptions options;
  options.timestamp = config.prefix_output_with_timestamp;
  if (!config.output_dir.empty()) {
    options.files =
        OutputFilesOf(config.output_dir, config.elastic, slot, generation);
  }
  return options;
}

common::Result<std::unique_ptr<OutputRelay>> OutputRelay::Start(
    std::vector<RelayStream> streams, const RelayOptions& options) {
  std::unique_ptr<OutputRelay> relay(new OutputRelay());
  relay->timestamp_ = options.timestamp;
  const std::optional<OutputFiles>& files = options.files;
  for (const RelayStream& source : streams) {
    auto stream = std::make_unique<Stream>();
    stream->source = source;
    const char* kind = source.is_stderr ? "stderr" : "stdout";
    stream->prefix = "[" + std::to_string(source.rank) + "]<" + kind + ">:";
    if (files) {
      auto file = OpenOutputFile(
          files->root, files->subdir,
          source.is_stderr ? files->stderr_name : files->stdout_name);
      if (file.ok()) {
        stream->file = std::move(*file);
      } else {
        spdlog::error(
            "hvdrun: --output-filename: {}; this worker's {} goes to "
            "hvdrun's only",
            file.status().message(), kind);
      }
    }
    relay->streams_.push_back(std::move(stream));
  }
  if (pipe2(relay->wake_, O_CLOEXEC) != 0) {
    return common::Status::Internal(std::string("output relay: pipe: ") +
                                    std::strerror(errno));
  }
  relay->thread_ = std::thread([r = relay.get()] { r->Run(); });
  return relay;
}

OutputRelay::~OutputRelay() {
  Join();
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

void OutputRelay::Join() {
  if (thread_.joinable()) thread_.join();
}

std::vector<int> OutputRelay::JoinWithin(std::chrono::milliseconds bound) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ended_.wait_for(lock, bound, [this] { return ended_all_; })) {
      const char stop = 1;
      while (write(wake_[1], &stop, 1) < 0 && errno == EINTR) {
      }
    }
  }
  Join();
  return still_open_;
}

// Relays the complete lines in `stream`'s pending bytes; at end-of-file
// (`eof`) a last line without a newline is completed with one first.
void OutputRelay::Emit(Stream* stream, bool eof) {
  if (eof && !stream->pending.empty() && stream->pending.back() != '\n') {
    stream->pending.push_back('\n');
  }
  size_t end = stream->pending.rfind('\n');
  if (end == std::string::npos) return;
  // Every line of this read gets the time it was read.
  const std::string stamp =
      timestamp_ ? OutputTimestamp(std::time(nullptr)) : std::string();
  const bool to_file = stream->file.is_open();
  std::string out, file_text;
  size_t start = 0;
  while (start <= end) {
    size_t newline = stream->pending.find('\n', start);
    if (stream->source.tail) {
      stream->source.tail->Add(
          std::string_view(stream->pending).substr(start, newline - start),
          stream->source.is_stderr);
    }
    out += stamp;
    out += stream->prefix;
    out.append(stream->pending, start, newline + 1 - start);
    if (to_file && timestamp_) {
      file_text += stamp;
      file_text += ' ';
      file_text.append(stream->pending, start, newline + 1 - start);
    }
    start = newline + 1;
  }
  FILE* target = stream->source.is_stderr ? stderr : stdout;
  std::fwrite(out.data(), 1, out.size(), target);
  std::fflush(target);
  if (to_file) {
    if (timestamp_) {
      stream->file.Write(file_text.data(), file_text.size());
    } else {
      stream->file.Write(stream->pending.data(), end + 1);
    }
  }
  stream->pending.erase(0, end + 1);
}

void OutputRelay::Run() {
  std::vector<Stream*> open;
  for (auto& stream : streams_) open.push_back(stream.get());
  char buffer[65536];
  bool stopped = false;
  while (!open.empty() && !stopped) {
    std::vector<pollfd> fds;
    for (Stream* stream : open) fds.push_back({stream->source.fd, POLLIN, 0});
    fds.push_back({wake_[0], POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    stopped = fds.back().revents != 0;
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Stream* stream = open[i];
      ssize_t n = read(stream->source.fd, buffer, sizeof(buffer));
      if (n > 0) {
        stream->pending.append(buffer, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      }
      const bool eof = n <= 0;
      Emit(stream, eof);
      if (eof) {
        close(stream->source.fd);
        stream->source.fd = -1;
      }
    }
    std::vector<Stream*> still_open;
    for (Stream* stream : open) {
      if (stream->source.fd >= 0) still_open.push_back(stream);
    }
    open.swap(still_open);
  }
  // Asked to stop: what is left open is relayed no further.
  for (Stream* stream : open) {
    Emit(stream, true);
    close(stream->source.fd);
    stream->source.fd = -1;
    still_open_.push_back(stream->source.rank);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ended_all_ = true;
  ended_.notify_all();
}

}  // namespace hvd::launcher
