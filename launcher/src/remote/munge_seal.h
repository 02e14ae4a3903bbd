// Sealing a Slurm step's launch message with MUNGE, the credential
// service every Slurm node runs (its munged shares one key across the
// cluster).
//
// Contract: MungeSeal asks this node's munged for a credential that
// carries `payload` encrypted (AES-128, asked for explicitly rather than
// left to munged's default) and that only this user (getuid()) may
// decode; it fails, never returns the payload in clear. MungeUnseal
// decodes a credential once through the remote node's munged and gives the
// payload only when munged accepted it (not replayed: munged remembers
// every credential it decoded until it expires; not expired; not rewound)
// and it was made by this user and encrypted. Every refusal is a Status
// whose message says what was refused, why, and what to do. The socket is
// munged's Unix socket; empty: libmunge's default.
#pragma once

#include <string>
#include <string_view>

#include "hvd/common/status.h"

namespace hvd::launcher {

common::Result<std::string> MungeSeal(std::string_view payload,
                                      const std::string& socket);

common::Result<std::string> MungeUnseal(const std::string& credential,
                                        const std::string& socket);

// The socket as messages name it: the path, or libmunge's default.
std::string MungeSocketName(const std::string& socket);

}  // namespace hvd::launcher
