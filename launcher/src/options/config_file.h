// horovodrun's --config-file: a YAML file of sections (params, autotune,
// timeline, stall_check, library_options, logging) and a controller. Each
// known key becomes the command-line words of its option, which cli.cc
// parses before the command line's own, so that the command line wins
// whatever the order. Unknown keys, values of the wrong shape and keys for
// options hvdrun refuses are errors naming the file, the key and what was
// expected. Pure apart from reading the file; unit-tested.
#pragma once

#include <string>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::launcher {

struct FileSetting {
  std::string key;                 // "params.fusion_threshold_mb"
  std::vector<std::string> words;  // {"--fusion-threshold-mb=64"}
};

// `text` is the file's content; `path` names it in messages.
common::Result<std::vector<FileSetting>> ParseConfigText(
    const std::string& text, const std::string& path);

common::Result<std::vector<FileSetting>> ReadConfigFile(
    const std::string& path);

}  // namespace hvd::launcher
