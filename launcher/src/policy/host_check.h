// The host check before a host's first worker (docs/design.md, "The host
// check"): hvdrun runs itself on the host over ssh, in a hidden mode that
// prints the host's network interfaces. One answer proves that ssh works
// without a prompt, that hvdrun is installed at the same path there (the
// remote workers are started through it), and tells which interfaces the
// host has, so that a --network-interfaces list none of them matches is one
// message from hvdrun instead of a traceback per worker.
//
// This file is the pure part: the remote command, the answer's format, and
// the verdict on one ssh run with the message that names the host. The I/O
// is host_check_run.h.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/network_interfaces.h"
#include "hvd/common/status.h"

namespace hvd::launcher {

using common::NetworkInterface;

// argv[1] of hvdrun in host-check mode.
inline constexpr char kHostCheckFlag[] = "--hvd-internal-host-check";
// The answer's first line. What a login script prints before it is
// skipped.
inline constexpr char kHostCheckMarker[] = "hvd-host-check 1";

// The answer: the marker line, then "name address" per interface, one a
// line.
std::string FormatHostCheckAnswer(
    const std::vector<NetworkInterface>& interfaces);
// The interfaces of an answer, or an error naming what is wrong with it.
common::Result<std::vector<NetworkInterface>> ParseHostCheckAnswer(
    const std::string& text);

// What became of one run of ssh.
struct SshOutcome {
  int wait_status = 0;     // as waitpid reports it
  bool timed_out = false;  // killed at the check's deadline
  std::string stdout_text, stderr_text;
};

// Why ssh refused a host's key, from ssh's stderr: a key it does not know
// (StrictHostKeyChecking yes, or BatchMode's refusal to ask), or one that
// differs from known_hosts'; nothing for any other failure.
std::optional<std::string> HostKeyDistrust(const std::string& ssh_stderr);

// The host's interfaces, or an error whose message names the host and what
// failed: ssh (quoting ssh's last line of stderr; a refused host key says
// how to trust the host, kUnauthenticated), hvdrun missing at
// `hvdrun_path` there (the remote shell's 127), the deadline of
// `timeout_seconds`, or a garbled answer.
common::Result<std::vector<NetworkInterface>> JudgeHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    int64_t timeout_seconds, const SshOutcome& outcome,
    std::string_view tool = "ssh");

// Nothing when `wanted` (a --network-interfaces list; empty: any) names an
// interface `have` has (a loopback one only if `loopback_counts`); else the
// message naming the host, the list and the interfaces it has.
std::optional<std::string> MissingInterfaces(
    const std::string& host, const std::vector<std::string>& wanted,
    const std::vector<NetworkInterface>& have, bool loopback_counts);

// The last non-blank line of `text`, trimmed and cut to its last
// `max_chars` characters: the line of ssh's stderr that says why.
std::string LastLine(const std::string& text, size_t max_chars = 300);

}  // namespace hvd::launcher
