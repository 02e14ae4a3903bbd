#include "output_relay.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace hvd::launcher {

struct OutputRelay::Stream {
  RelayStream source;
  std::string prefix;
  std::string pending;  // bytes after the last newline
  std::ofstream file;
};

namespace {

common::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return common::Status::InvalidArgument("--output-filename: cannot create " +
                                           path + ": " + std::strerror(errno));
  }
  return common::Status::Ok();
}

}  // namespace

common::Result<std::unique_ptr<OutputRelay>> OutputRelay::Start(
    std::vector<RelayStream> streams, const std::string& output_dir) {
  std::unique_ptr<OutputRelay> relay(new OutputRelay());
  if (!output_dir.empty()) {
    common::Status made = MakeDir(output_dir);
    if (!made.ok()) return made;
  }
  for (const RelayStream& source : streams) {
    auto stream = std::make_unique<Stream>();
    stream->source = source;
    const char* kind = source.is_stderr ? "stderr" : "stdout";
    stream->prefix = "[" + std::to_string(source.rank) + "]<" + kind + ">:";
    if (!output_dir.empty()) {
      std::string dir = output_dir + "/rank." + std::to_string(source.rank);
      common::Status made = MakeDir(dir);
      if (!made.ok()) return made;
      stream->file.open(dir + "/" + kind, std::ios::out | std::ios::trunc);
      if (!stream->file) {
        return common::Status::InvalidArgument(
            "--output-filename: cannot write " + dir + "/" + kind);
      }
    }
    relay->streams_.push_back(std::move(stream));
  }
  relay->thread_ = std::thread([r = relay.get()] { r->Run(); });
  return relay;
}

OutputRelay::~OutputRelay() { Join(); }

void OutputRelay::Join() {
  if (thread_.joinable()) thread_.join();
}

void OutputRelay::Run() {
  std::vector<Stream*> open;
  for (auto& stream : streams_) open.push_back(stream.get());
  char buffer[65536];
  while (!open.empty()) {
    std::vector<pollfd> fds;
    for (Stream* stream : open) fds.push_back({stream->source.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Stream* stream = open[i];
      ssize_t n = read(stream->source.fd, buffer, sizeof(buffer));
      if (n > 0) {
        stream->pending.append(buffer, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      }
      bool eof = n <= 0;
      if (eof && !stream->pending.empty() && stream->pending.back() != '\n') {
        stream->pending.push_back('\n');
      }
      size_t end = stream->pending.rfind('\n');
      if (end != std::string::npos) {
        std::string out;
        size_t start = 0;
        while (start <= end) {
          size_t newline = stream->pending.find('\n', start);
          if (stream->source.tail) {
            stream->source.tail->Add(std::string_view(stream->pending)
                                         .substr(start, newline - start),
                                     stream->source.is_stderr);
          }
          out += stream->prefix;
          out.append(stream->pending, start, newline + 1 - start);
          start = newline + 1;
        }
        FILE* target = stream->source.is_stderr ? stderr : stdout;
        std::fwrite(out.data(), 1, out.size(), target);
        std::fflush(target);
        if (stream->file.is_open()) {
          stream->file.write(stream->pending.data(), end + 1);
          stream->file.flush();
        }
        stream->pending.erase(0, end + 1);
      }
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
}

}  // namespace hvd::launcher
