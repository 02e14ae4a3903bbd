// Every environment variable hvd reads, spelled once. Horovod's own names are
// kept so that existing job scripts work; hvd-only names start with HVD_.
#pragma once

namespace hvd::common::env_vars {

// Log level of every hvd process: trace, debug, info, warning, error, fatal.
inline constexpr char kHorovodLogLevel[] = "HOROVOD_LOG_LEVEL";
// Same as HOROVOD_LOG_LEVEL; wins when both are set.
inline constexpr char kHvdLogLevel[] = "HVD_LOG_LEVEL";
// The per-job secret (hex) that signs every rendezvous and notification
// request. Set by the launcher in the worker's environment, never on a
// command line.
inline constexpr char kHvdSecretKey[] = "HVD_SECRET_KEY";
// Address and port of the driver's rendezvous server.
inline constexpr char kGlooRendezvousAddr[] = "HOROVOD_GLOO_RENDEZVOUS_ADDR";
inline constexpr char kGlooRendezvousPort[] = "HOROVOD_GLOO_RENDEZVOUS_PORT";

}  // namespace hvd::common::env_vars
