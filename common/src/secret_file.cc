#include "hvd/common/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "hvd/common/hmac.h"

namespace hvd::common {

namespace {

bool UrlSafe(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string Octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode));
  return text;
}

}  // namespace

Result<std::string> SecretFromFile(const std::string& path,
                                   const SecretFileRules& rules) {
  const std::string where = rules.flag + " " + path;
  // O_NONBLOCK: a FIFO in its place must not wait for a writer.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT && rules.make_missing) {
    // Made whole under another name, then linked into place: a reader
    // never sees it half written, and of two hvdruns making it at once
    // one links and the other reads what that one made.
    const std::string draft = path + ".new-" + std::to_string(getpid());
    int out =
        open(draft.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
      return Status::InvalidArgument(
          where + ": cannot create it: " + std::strerror(errno));
    }
    auto secret = NewJobSecret();
    bool written = secret.ok() && write(out, secret->data(), secret->size()) ==
                                      static_cast<ssize_t>(secret->size());
    int error = errno;
    close(out);
    const bool linked = written && link(draft.c_str(), path.c_str()) == 0;
    if (written && !linked) error = errno;
    unlink(draft.c_str());
    if (!secret.ok()) return secret.status();
    if (!written) {
      return Status::InvalidArgument(where + ": cannot write a new " +
                                     rules.noun + ": " + std::strerror(error));
    }
    if (linked) return *secret;
    if (error != EEXIST) {
      return Status::InvalidArgument(
          where + ": cannot create it: " + std::strerror(error));
    }
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  }
  if (fd < 0) {
    return Status::InvalidArgument(where +
                                   ": cannot read it: " + std::strerror(errno));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return Status::InvalidArgument(where + ": not a regular file");
  }
  if (rules.private_to_user &&
      (info.st_uid != geteuid() || (info.st_mode & 077) != 0)) {
    close(fd);
    return Status::InvalidArgument(
        where + ": the file is open to others (owner uid " +
        std::to_string(info.st_uid) + ", mode " + Octal(info.st_mode & 07777) +
        "): it must belong to uid " + std::to_string(geteuid()) +
        " with mode 0600 or 0400 (chmod 600 " + path + ")");
  }
  // A secret longer than any allowed is refused without reading it whole.
  std::string text(rules.max_chars + 2, '\0');
  size_t have = 0;
  while (have < text.size()) {
    ssize_t n = read(fd, text.data() + have, text.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      return Status::InvalidArgument(
          where + ": cannot read it: " + std::strerror(error));
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  close(fd);
  text.resize(have);
  const size_t first = text.find_first_not_of(" \t\r\n");
  const size_t last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.size() < rules.min_chars || text.size() > rules.max_chars ||
      !std::all_of(text.begin(), text.end(), UrlSafe)) {
    return Status::InvalidArgument(
        where + ": the " + rules.noun + " must be " +
        std::to_string(rules.min_chars) + " to " +
        std::to_string(rules.max_chars) +
        " letters, digits, '-', '.', '_' or '~' (remove the file to have "
        "hvdrun make one)");
  }
  return text;
}

}  // namespace hvd::common
