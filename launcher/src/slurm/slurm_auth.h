// Which munged Slurm talks to: the socket its AuthInfo option names
// (`AuthInfo=socket=/path`), so that hvdrun seals a step's launch message
// (remote/munge_seal.h) through the same munged as Slurm itself, a private
// one included.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::launcher {

// The socket named by the AuthInfo line of `text`, which is either a
// slurm.conf ("AuthInfo=socket=/p,ttl=60", comments after '#') or the
// output of `scontrol show config` ("AuthInfo    = socket=/p"). The key
// and the option's name are case-insensitive, as Slurm reads them; the
// last AuthInfo line wins. nullopt: no line, "(null)", or no socket
// option. Pure (tests/launcher/slurm_auth_test.cc).
std::optional<std::string> MungeSocketFromSlurmConfig(std::string_view text);

// The socket for this process's Slurm: from `scontrol show config` (what
// slurmctld runs with, configless clusters included), else from the
// slurm.conf that SLURM_CONF names (default /etc/slurm/slurm.conf); empty
// for libmunge's default socket when neither names one. Asked once per
// process (the first answer is kept); any thread may call it.
std::string SlurmMungeSocket(std::chrono::milliseconds timeout);

}  // namespace hvd::launcher
