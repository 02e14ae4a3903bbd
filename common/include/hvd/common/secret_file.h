// A secret kept in a file of the user's: a status page's read token
// (--status-token-file) or a job's secret shared with its standby
// hvdruns (--job-secret-file). The first run makes the file, mode 0600,
// with a new random secret; every later run reads it. One rule for both,
// so that a file one flag accepts the other accepts too, unless it asks
// for a private file.
#pragma once

#include <cstddef>
#include <string>

#include "hvd/common/status.h"

namespace hvd::common {

struct SecretFileRules {
  std::string flag;             // named in every error: "--job-secret-file"
  std::string noun = "secret";  // what the errors call it: "token"
  size_t min_chars = 16;
  size_t max_chars = 256;
  // The file must belong to this user and be closed to everyone else, as
  // ssh asks of a private key: a job secret lets its holder command the
  // job's workers. A read token may be shared with a group (a metrics
  // scraper), so it does not ask this.
  bool private_to_user = false;
  // A reader of another's secret (`hvdrun status --token-file`) must not
  // make one: a missing file is an error then.
  bool make_missing = true;
};

// The secret in `path`: its content without surrounding white space,
// `min_chars` to `max_chars` characters a URL carries as they are
// (letters, digits, '-', '.', '_', '~'). A missing file is made (unless
// !make_missing), mode 0600, with a new random secret, and appears whole
// (written under another name, then linked into place). Errors name the flag,
// the file and what to do.
Result<std::string> SecretFromFile(const std::string& path,
                                   const SecretFileRules& rules);

}  // namespace hvd::common
