// Every environment variable hvd reads, spelled once. Horovod's own names are
// kept so that existing job scripts work; hvd-only names start with HVD_.
#pragma once

namespace hvd::common::env_vars {

// Log level of every hvd process: trace, debug, info, warning, error, fatal.
inline constexpr char kHorovodLogLevel[] = "HOROVOD_LOG_LEVEL";
// Same as HOROVOD_LOG_LEVEL; wins when both are set.
inline constexpr char kHvdLogLevel[] = "HVD_LOG_LEVEL";
// What older hvdruns called the job secret in workers' environments: hvd
// reads it nowhere now (workers get keys derived from the secret), and
// hvdrun never forwards one from its own environment.
inline constexpr char kHvdSecretKey[] = "HVD_SECRET_KEY";
// The worker's own key (hex; common/worker_key.h), set by hvdrun for each
// worker: it signs the worker's requests to hvdrun, and hvdrun's to its
// notification server. The runtime reads it once and removes it from the
// process's environment, so that programs the user's code starts do not
// inherit it, unless HVD_KEEP_WORKER_KEY is 1.
inline constexpr char kHvdWorkerKey[] = "HVD_WORKER_KEY";
inline constexpr char kHvdKeepWorkerKey[] = "HVD_KEEP_WORKER_KEY";
// The etcd backend (common/worker_key.h, job_signing_key.h): the job
// signing key's public half, with which workers check what hvdrun writes
// to etcd; and, for a static job's workers only, the key from which each
// generation's sealing key derives (taken out of the environment as
// HVD_WORKER_KEY is).
inline constexpr char kHvdJobPublicKey[] = "HVD_JOB_PUBLIC_KEY";
inline constexpr char kHvdGenerationsKey[] = "HVD_GENERATIONS_KEY";
// Address and port of the driver's rendezvous server.
inline constexpr char kGlooRendezvousAddr[] = "HOROVOD_GLOO_RENDEZVOUS_ADDR";
inline constexpr char kGlooRendezvousPort[] = "HOROVOD_GLOO_RENDEZVOUS_PORT";

// Where the job's rendezvous lives (hvdrun --rendezvous-backend):
// "embedded", hvdrun's own server, or "etcd", under HVD_ETCD_PREFIX in the
// etcd cluster of HVD_ETCD_ENDPOINTS ("HOST:PORT[,HOST:PORT...]"). Set by
// hvdrun for each worker.
inline constexpr char kHvdRendezvousBackend[] = "HVD_RENDEZVOUS_BACKEND";
inline constexpr char kHvdEtcdEndpoints[] = "HVD_ETCD_ENDPOINTS";
inline constexpr char kHvdEtcdPrefix[] = "HVD_ETCD_PREFIX";
// etcd's own client settings, read by hvdrun and its workers as etcdctl
// reads them: a user ("name" or "name:password") and password for an etcd
// with authentication on, and the TLS files (the CA that signed the
// members' certificates, this client's certificate and key).
inline constexpr char kEtcdctlUser[] = "ETCDCTL_USER";
inline constexpr char kEtcdctlPassword[] = "ETCDCTL_PASSWORD";
inline constexpr char kEtcdctlCacert[] = "ETCDCTL_CACERT";
inline constexpr char kEtcdctlCert[] = "ETCDCTL_CERT";
inline constexpr char kEtcdctlKey[] = "ETCDCTL_KEY";

// A worker's place in the job, set by the launcher for each worker.
inline constexpr char kRank[] = "HOROVOD_RANK";
inline constexpr char kSize[] = "HOROVOD_SIZE";
inline constexpr char kLocalRank[] = "HOROVOD_LOCAL_RANK";
inline constexpr char kLocalSize[] = "HOROVOD_LOCAL_SIZE";
inline constexpr char kCrossRank[] = "HOROVOD_CROSS_RANK";
inline constexpr char kCrossSize[] = "HOROVOD_CROSS_SIZE";
inline constexpr char kHostname[] = "HOROVOD_HOSTNAME";
// 1 when the job is elastic (hvdrun --min-np/--host-discovery-script).
inline constexpr char kElastic[] = "HOROVOD_ELASTIC";
// Seconds between host discovery runs (hvdrun; --discovery-interval wins).
inline constexpr char kHvdDiscoveryInterval[] = "HVD_DISCOVERY_INTERVAL";
// Seconds one discovery run may take before it is killed (hvdrun).
inline constexpr char kHvdDiscoveryTimeout[] = "HVD_DISCOVERY_TIMEOUT";
// hvdrun's id of one worker process, unique in the job: its check-ins
// carry it (set by hvdrun for each worker).
inline constexpr char kHvdWorkerId[] = "HVD_WORKER_ID";
// Seconds a remote worker's guard waits without a word (a heartbeat every
// second) from hvdrun before it stops the worker (hvdrun; default 5).
inline constexpr char kHvdRemoteSilenceSeconds[] = "HVD_REMOTE_SILENCE_SECONDS";
// The read token `hvdrun status URL` sends (--token-file wins), so that it
// need not be on the command line, where `ps` shows it to other users.
inline constexpr char kHvdStatusToken[] = "HVD_STATUS_TOKEN";
// Seconds between a worker's progress reports to hvdrun (ops, bytes, steps,
// commits, stalls, recovery phases; fractions allowed; default 1; 0: none).
inline constexpr char kHvdReportIntervalSeconds[] =
    "HVD_REPORT_INTERVAL_SECONDS";
// Which controller and CPU collectives the worker uses; hvd has Gloo only.
inline constexpr char kController[] = "HOROVOD_CONTROLLER";
inline constexpr char kCpuOperations[] = "HOROVOD_CPU_OPERATIONS";
// Network interface Gloo binds to (hvdrun --network-interface).
inline constexpr char kGlooIface[] = "HOROVOD_GLOO_IFACE";
// Seconds a Gloo operation may take (hvdrun --gloo-timeout-seconds).
inline constexpr char kGlooTimeoutSeconds[] = "HOROVOD_GLOO_TIMEOUT_SECONDS";
// Seconds workers may take to start and meet (hvdrun --start-timeout).
inline constexpr char kStartTimeout[] = "HOROVOD_START_TIMEOUT";
// Seconds an elastic worker keeps trying to rejoin the job (hvd.elastic.run
// re-initializing after a failure) before it gives up (hvdrun
// --elastic-timeout; Horovod's name for the driver's same bound).
inline constexpr char kElasticTimeout[] = "HOROVOD_ELASTIC_TIMEOUT";
// Tuning knobs (hvdrun --fusion-threshold-mb, --cycle-time-ms,
// --cache-capacity, --timeline-filename). The fusion threshold is in bytes.
inline constexpr char kFusionThreshold[] = "HOROVOD_FUSION_THRESHOLD";
inline constexpr char kCycleTime[] = "HOROVOD_CYCLE_TIME";
inline constexpr char kCacheCapacity[] = "HOROVOD_CACHE_CAPACITY";
inline constexpr char kTimeline[] = "HOROVOD_TIMELINE";
// 1: the timeline also marks the start of every background cycle
// (hvdrun --timeline-mark-cycles).
inline constexpr char kTimelineMarkCycles[] = "HOROVOD_TIMELINE_MARK_CYCLES";
// 1: tensors of a grouped op are fused only with each other, never with
// other ready tensors.
inline constexpr char kDisableGroupFusion[] = "HOROVOD_DISABLE_GROUP_FUSION";
// 0: allreduce / allgather are flat even with several ranks on a host.
inline constexpr char kHierarchicalAllreduce[] =
    "HOROVOD_HIERARCHICAL_ALLREDUCE";
inline constexpr char kHierarchicalAllgather[] =
    "HOROVOD_HIERARCHICAL_ALLGATHER";
// Bytes of one local rank's shared-memory buffer (runtime/src/ops/shm/).
inline constexpr char kHvdShmChunkBytes[] = "HVD_SHM_CHUNK_BYTES";
// 0: an elastic reset never keeps or shrinks the last generation's NCCL
// communicator; each generation makes its own (docs/gpu.md).
inline constexpr char kHvdNcclShrink[] = "HVD_NCCL_SHRINK";
// 1: process sets may be added and removed after init.
inline constexpr char kDynamicProcessSets[] = "HOROVOD_DYNAMIC_PROCESS_SETS";
// Autotune (hvdrun --autotune, --autotune-log-file, ...): rank 0 tunes the
// fusion threshold, cycle time and cache on/off from measured throughput.
inline constexpr char kAutotune[] = "HOROVOD_AUTOTUNE";
inline constexpr char kAutotuneLog[] = "HOROVOD_AUTOTUNE_LOG";
inline constexpr char kAutotuneWarmupSamples[] =
    "HOROVOD_AUTOTUNE_WARMUP_SAMPLES";
inline constexpr char kAutotuneStepsPerSample[] =
    "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE";
inline constexpr char kAutotuneMaxSamples[] =
    "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES";
// Stall inspector: rank 0 warns when some ranks have submitted a tensor and
// others have not for this many seconds, and with a shutdown time set,
// stops every rank's collectives (HorovodInternalError) after that long.
// Background thread's core per local rank, "0,4" (as Horovod).
inline constexpr char kThreadAffinity[] = "HOROVOD_THREAD_AFFINITY";
inline constexpr char kLogHideTime[] = "HOROVOD_LOG_HIDE_TIME";
// Passed on for horovodrun's command lines; hvd reads neither.
inline constexpr char kAutotuneGaussianProcessNoise[] =
    "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE";
inline constexpr char kNcclIbDisable[] = "NCCL_IB_DISABLE";
inline constexpr char kStallCheckDisable[] = "HOROVOD_STALL_CHECK_DISABLE";
inline constexpr char kStallCheckTimeSeconds[] =
    "HOROVOD_STALL_CHECK_TIME_SECONDS";
inline constexpr char kStallShutdownTimeSeconds[] =
    "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS";

}  // namespace hvd::common::env_vars
