// Fuzzes what a remote guard reads from its standard input, which on a
// Slurm step anyone on the path can write to (launcher/src/process/
// remote_launch.h): the frame's length line and marker, then the payload
// of a plain frame. A frame it accepts lies within the input and framed
// again parses to the same body and kind; a payload it accepts encodes
// again to one that decodes the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "process/remote_launch.h"

using hvd::launcher::DecodeRemoteLaunch;
using hvd::launcher::EncodeRemoteLaunchPayload;
using hvd::launcher::FrameLaunch;
using hvd::launcher::ParseLaunchFrame;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto frame = ParseLaunchFrame(input);
  if (!frame.ok()) {
    HVD_FUZZ_CHECK(frame.status().code() ==
                   hvd::common::Code::kInvalidArgument);
  } else if (frame->has_value()) {
    const auto& whole = **frame;
    HVD_FUZZ_CHECK(whole.body_at <= input.size());
    HVD_FUZZ_CHECK(whole.body_size <= input.size() - whole.body_at);
    HVD_FUZZ_CHECK(input[whole.body_at - 1] == '\n');
    const std::string_view body = input.substr(whole.body_at, whole.body_size);
    const std::string again = FrameLaunch(whole.seal, body);
    auto reparsed = ParseLaunchFrame(again);
    HVD_FUZZ_CHECK(reparsed.ok() && reparsed->has_value());
    HVD_FUZZ_CHECK((*reparsed)->seal == whole.seal);
    HVD_FUZZ_CHECK(again.substr((*reparsed)->body_at) == body);
  }
  // The payload's parser on the same bytes, as if they were a body.
  auto launch = DecodeRemoteLaunch(input);
  if (!launch.ok()) {
    HVD_FUZZ_CHECK(launch.status().code() ==
                   hvd::common::Code::kInvalidArgument);
    return 0;
  }
  auto again = DecodeRemoteLaunch(EncodeRemoteLaunchPayload(*launch));
  HVD_FUZZ_CHECK(again.ok());
  HVD_FUZZ_CHECK(again->working_dir == launch->working_dir);
  HVD_FUZZ_CHECK(again->env == launch->env);
  HVD_FUZZ_CHECK(again->argv == launch->argv);
  HVD_FUZZ_CHECK(again->adopt_name == launch->adopt_name);
  HVD_FUZZ_CHECK(again->adopt_grace_ms == launch->adopt_grace_ms);
  return 0;
}
