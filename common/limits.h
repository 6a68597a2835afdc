// Every constant a reader would ask about — timeouts, liveness, sizes — named, with its
// unit, in one place. Daemons expose most of them as flags; these are the defaults.
#pragma once

#include <cstddef>
#include <cstdint>

namespace benchfleet {

// Version of the wire protocol in schemas/protocol.md; carried as "v" in every message.
inline constexpr int kProtocolVersion = 1;

// A peer may send at most this many bytes in one frame (ZMQ_MAXMSGSIZE); a larger frame
// makes libzmq drop the connection instead of buffering it. A result with every raw
// sample of a long run stays well below this.
inline constexpr int64_t kMaxMessageBytes = 16 * 1024 * 1024;

// Users' model files (schemas/protocol.md, model_upload / model_fetch): the largest file a
// sweep may name, and the raw bytes one message carries. A chunk is 5.3 MiB once in
// base64, a third of kMaxMessageBytes, and takes the coordinator's loop a few
// milliseconds to write or read and hash, so heartbeats are never held up by a transfer.
inline constexpr int64_t kMaxModelBytes = int64_t{4} << 30;
inline constexpr int64_t kModelChunkBytes = int64_t{4} << 20;
// What an agent keeps of fetched models by default (--model-cache-mb): the least
// recently used are removed beyond it.
inline constexpr int64_t kDefaultModelCacheBytes = int64_t{20} << 30;

// Heartbeats in the spirit of the ZeroMQ guide's Paranoid Pirate: a peer silent for
// liveness x interval is taken for dead.
inline constexpr int kHeartbeatIntervalMs = 1000;
inline constexpr int kHeartbeatLiveness = 3;

// How often an agent resends a result the coordinator has not acknowledged yet: first
// after this, then twice as long after each resend that brought no ack, up to the
// maximum. A coordinator that lags under load is not flooded with duplicates of what
// it has not read yet; any ack resets the interval.
inline constexpr int kResultResendIntervalMs = 2000;
inline constexpr int kResultResendMaxIntervalMs = 30000;

// How often an unregistered agent repeats its registration.
inline constexpr int kRegisterRetryMs = 1000;

// How long the CLI waits for the coordinator's reply before giving up.
inline constexpr int kClientReplyTimeoutMs = 10000;

// A host's price per hour above this is a typo (docs/results.md, Cost); the currency is
// an ISO 4217 code, USD unless given.
inline constexpr double kMaxPricePerHour = 1e6;
inline constexpr const char* kDefaultCurrency = "USD";

// Rows returned at most by one results/query request; the reply says when it was cut.
inline constexpr int kMaxReplyRows = 10000;

// Repeats in fresh processes (schemas/sweep.md, Processes): a job with `processes` K
// runs K times, each in a worker process of its own, interleaved with the other jobs of
// its sweep on that agent; its interval is then the one across processes. K above the
// limit is a typo; a job with `precision` and no `processes` stops at the precision or
// at kPrecisionMaxProcesses, whichever comes first. The coordinator's --processes gives
// the sweeps that name neither kDefaultProcesses (chosen in docs/performance.md,
// Processes); a job alone (benchfleet-worker job.json) is one process.
inline constexpr int64_t kMaxJobProcesses = 50;
inline constexpr int64_t kPrecisionMaxProcesses = 20;
inline constexpr int64_t kDefaultProcesses = 5;
// With `precision`, the processes measured before the first choice is made.
inline constexpr int64_t kPrecisionPilotProcesses = 3;

// A worker is killed when a job runs past its timeout. Without one in the sweep, the
// timeout is derived from the job's timing budget plus this allowance for process
// start-up and model construction.
inline constexpr double kJobStartupAllowanceS = 60.0;
// A job with search.max_batch builds and runs its model once per probed batch (a dozen
// or two probes) before it is timed: this much more time, unless the sweep sets its own.
inline constexpr double kMaxBatchSearchAllowanceS = 900;

// A host calibration (peak GEMM and memory bandwidth, CPU and GPUs) is killed after this.
inline constexpr double kCalibrationTimeoutS = 600.0;

// `benchfleet-worker --probe` (LibTorch start-up, device enumeration) must answer
// within this at agent start, or the agent refuses to start.
inline constexpr int kWorkerProbeTimeoutMs = 60000;

// The coordinator's idle wake-up: checks liveness and dispatches at least this often.
inline constexpr int kCoordinatorTickMs = 200;

}  // namespace benchfleet
