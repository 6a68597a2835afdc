// The job a benchfleet-worker runs (schemas/worker.md) and its validation. One source
// of truth: the worker parses every job with it, and a sweep file is accepted only when
// each of its combinations passes it, so a sweep never enqueues a job a worker refuses.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace benchfleet {

// The measurement budget of one job; the defaults are those of schemas/worker.md.
struct TimingSpec {
  double warmup_s = 0.2;    // run untimed iterations for at least this long
  double min_time_s = 0.5;  // sample at least this long ...
  double max_time_s = 5.0;  // ... and never longer than this
  // Stop sampling once the median's 95% confidence interval lies within this fraction
  // of it on either side (half-width / median), min_time_s having passed.
  double target_ci = 0.01;
};

// A thread count above this is a typo, not an experiment.
inline constexpr std::int64_t kMaxJobThreads = 4096;

// A model dimension (width, size, channels) above this is a typo.
inline constexpr std::int64_t kMaxModelDimension = std::int64_t{1} << 20;

// model_args of each built-in model, with their defaults (schemas/worker.md).
struct MatmulArgs {
  std::int64_t m = 2048, k = 2048, n = 2048;
};
struct MlpArgs {
  std::vector<std::int64_t> layers = {1024, 1024, 10};  // feature sizes, input first
};
struct CnnArgs {
  std::int64_t width = 64;                          // channels of the first stage
  std::vector<std::int64_t> blocks = {2, 2, 2, 2};  // BasicBlocks per stage (4 stages)
  std::int64_t image_size = 224;
  std::int64_t channels = 3;
  std::int64_t classes = 1000;
  std::string memory_format = "contiguous";  // or "channels_last" (NHWC activations and weights)
};
struct TransformerArgs {
  std::int64_t hidden = 768, heads = 12, layers = 12, ffn = 3072, seq_len = 128;
};
// A TorchScript file's path longer than this is a mistake (PATH_MAX is 4096).
inline constexpr std::size_t kMaxModelPathLength = 4096;
// The file of a model that is one (`torchscript`, a TorchScript module; `aoti`, an
// AOTInductor package) and where it comes from (schemas/sweep.md, Models by content): at
// least one of the three. A sweep file names the submitter's file by `path`, which
// `benchfleet submit` uploads and replaces by `sha256`; the coordinator takes `sha256`
// (its content is what the series is of) or `agent_path` (a file on each agent, under
// its --models-dir); the agent hands the worker `path`, where it put the file, beside
// the other key.
struct ModelFileArgs {
  std::string path;        // absolute: the file the worker loads
  std::string sha256;      // 64 lowercase hex digits: the file's content
  std::string agent_path;  // absolute: a file on the agent's host, under its --models-dir
  std::vector<std::vector<std::int64_t>> inputs;  // per forward() argument, without batch
  // torchscript: "none": run as saved; "freeze": torch::jit::freeze (weights and
  // attributes inlined as constants); "optimize": freeze, then
  // torch::jit::optimize_for_inference.
  std::string jit = "none";
  // What people call the model, whatever its content (empty: none): `compare` pairs two
  // sweeps' results by it where the file differs.
  std::string name;
};
inline constexpr std::size_t kMaxModelNameLength = 128;
// The models whose weights and code come in a file (ModelFileArgs): "torchscript", "aoti".
bool IsModelFile(const std::string& model);
// The values of the model arguments that are a choice, in the order errors list them.
const std::vector<std::string>& KnownMemoryFormats();
const std::vector<std::string>& KnownJitModes();

// The collectives (allreduce, broadcast, allgather): the bytes each rank puts in one
// call. 256 MiB is the top of the size axis users sweep (as nccl-tests do).
inline constexpr std::int64_t kMaxCollectiveBytes = std::int64_t{256} << 20;
struct CollectiveArgs {
  std::int64_t bytes = std::int64_t{1} << 20;
};

// A world of ranks (torch.distributed) above this is a typo.
inline constexpr std::int64_t kMaxWorldSize = 4096;

// One rank of a job run by several processes (the job's `distributed` object): who it
// is, where rank 0 hosts the c10d TCPStore the ranks meet at, and the address this
// rank's Gloo connections use (never a loopback fallback: schemas/worker.md).
struct DistributedSpec {
  std::int64_t rank = 0;
  std::int64_t world_size = 1;
  std::string store_host;
  std::int64_t store_port = 0;
  std::string address;
  // Bounds the rendezvous and every call (c10d's default is 30 minutes): a rank that
  // never comes fails the others within it.
  double timeout_s = 300;
};

// A job one model runs across ranks (the job's `parallel` object). "data": every rank
// holds the whole model and trains on its shard of the global batch, gradients
// averaged over the ranks in buckets, as DistributedDataParallel does. "pipeline": the
// model split into `stages` consecutive parts, one per rank, the batch in
// `micro_batches` going through them in a GPipe schedule.
inline constexpr double kDefaultBucketMb = 25;  // DDP's default bucket_cap_mb
// "collective": the collectives' ranks, nothing trained. In a sweep, `world_size`
// (a pipeline's `stages`) says how many ranks the job needs; the agents that run them
// add each rank's `distributed` object (docs/scheduling.md, Gangs).
struct ParallelSpec {
  std::string kind = "data";
  std::int64_t world_size = 0;          // 0: not given (distributed.world_size decides)
  double bucket_mb = kDefaultBucketMb;  // data
  bool overlap = false;                 // data: all-reduce buckets during backward
  std::int64_t stages = 0;              // pipeline: the world size
  std::int64_t micro_batches = 1;       // pipeline
  std::string schedule = "gpipe";       // pipeline: "gpipe" or "1f1b"
  // pipeline: every stage in this one process, stage s on cuda:s (device "cuda"), not
  // one rank per stage.
  bool in_process = false;
};

// The job's `prune` object: the model's weights pruned after it is built, its outputs
// then compared with the unpruned model's on the same inputs (schemas/worker.md).
// "magnitude": the `sparsity` share of each Linear/Conv weight with the smallest |w| set
// to zero (unstructured; dense kernels run as before). "structured": the `ratio` share of
// the hidden output neurons (mlp) or of each residual block's inner channels (cnn) with
// the smallest L1 norm removed, the layers shrunk to dense ones of the kept rows.
struct PruneSpec {
  std::string kind;     // "magnitude" or "structured"
  double sparsity = 0;  // magnitude: in [0, 1)
  double ratio = 0;     // structured: in [0, 1)
};
const std::vector<std::string>& KnownPruneKinds();

struct JobSpec;
// The job's `reference` object, a second model the job's outputs are compared with on
// the same inputs (a teacher): a job of its own whose model and model_args come from
// `reference` and everything else (batch_size, seed, device) from the job; it runs in
// fp32 and inference mode. A TorchScript reference takes the job's inputs (its
// model_args have no `inputs`).
using ReferenceSpec = std::shared_ptr<const JobSpec>;
// The job's `search` object: {"max_batch": {"memory_mb": M}} finds the largest batch
// that runs within M MiB instead of timing batch_size, which is where the search starts
// (schemas/worker.md, Largest batch that fits). 1 TiB is past any host: a typo.
inline constexpr std::int64_t kMaxSearchMemoryMb = std::int64_t{1} << 20;
// The search never probes a batch above this (the sweep's own batch_size limit).
inline constexpr std::int64_t kMaxSearchBatch = std::int64_t{1} << 20;
struct MaxBatchSearch {
  std::int64_t memory_mb = 0;
};

// Which copy of a job of several `replicas` this worker runs (the job's `replica`
// object, added by the agent that starts the copies): the copies meet at files in
// `barrier`, so that every one times while all of them run (schemas/worker.md, Replicas).
struct ReplicaSpec {
  std::int64_t index = 0;
  std::int64_t count = 1;
  std::string barrier;  // a directory all copies can write
};

// The job's `scenario` (schemas/worker.md, Scenarios), after MLPerf LoadGen: "offline"
// (absent or null: the timed loop at batch_size), "single_stream" (one query at a time,
// batch 1) or "server" (Poisson arrivals at qps, batched dynamically). The run limits
// default to LoadGen's TestSettings (min_duration_ms 10000, min_query_count 100).
inline constexpr double kMaxScenarioQps = 1e7;
inline constexpr double kMaxScenarioSeconds = 86400;
struct ServerScenario {
  double qps = 0;                    // server: the arrival rate, queries per second
  std::int64_t max_batch = 0;        // server: the batcher's largest batch (batch_size)
  double max_wait_ms = 1;            // server: how long the oldest query may wait for more
  std::optional<double> slo_p99_ms;  // server: search the highest qps with p99 within it
  double min_duration_s = 10;
  std::int64_t min_queries = 100;
  double max_duration_s = 60;  // a run still serving then stops, invalid
};
const std::vector<std::string>& KnownScenarios();
// An SLO search runs at most this many server runs (worker/measure/serving.h).
inline constexpr int kMaxSloProbes = 16;
// What a sweep's job timeout adds for a scenario besides its runs: the models built.
inline constexpr double kScenarioBuildAllowanceS = 120;

// A job after validation: every field present and within range. Only the args of
// `model` are meaningful.
struct JobSpec {
  std::int64_t job_id = 0;
  std::int64_t attempt = 1;
  std::string model;  // one of KnownModels()
  MatmulArgs matmul;
  MlpArgs mlp;
  CnnArgs cnn;
  TransformerArgs transformer;
  ModelFileArgs file;  // torchscript and aoti
  CollectiveArgs collective;
  std::optional<DistributedSpec> distributed;  // required by the collectives and `parallel`
  std::optional<ParallelSpec> parallel;
  std::optional<PruneSpec> prune;
  ReferenceSpec reference;                  // null: no reference (accuracy against fp32, if any)
  std::optional<MaxBatchSearch> max_batch;  // the job's search.max_batch
  // Independent copies of the job, each its own worker on its own `threads` CPUs of one
  // agent (1: a job of one process); `replica` says which copy this worker is.
  std::int64_t replicas = 1;
  std::optional<ReplicaSpec> replica;
  // One side of a duet (schemas/worker.md, Duet): the agent's `duet` object, {"index": 0
  // or 1, "barrier": dir}. The two sides of a pair run at once on disjoint CPUs and, as
  // replicas do, start timing together and keep running until both are done; count is 2.
  std::optional<ReplicaSpec> duet;
  // The job's `placement`, copied from its sweep's: "spread" puts each rank of a gang on
  // an agent of its own (JobNeeds); workers run one rank either way.
  bool spread = false;
  std::string scenario = "offline";  // one of KnownScenarios()
  ServerScenario serving;            // single_stream and server: their figures and limits
  std::string mode;                  // "inference" or "train"
  // "fp32" (true fp32 on every device), "tf32" (fp32 tensors, TF32 tensor-core math in
  // cuBLAS and cuDNN; CUDA only), "bf16" or "int8"
  std::string dtype;
  std::string device;  // "cpu", "cuda" or "cuda:N"
  // The LibTorch the job runs on (the sweep's `torch` axis): a version prefix ("2.15",
  // "1.13.1") a worker's torch version must match whole components of (TorchVersionMatches);
  // empty: the agent's first worker. The worker that runs it checks its own.
  std::string torch;
  // How a zoo model runs (KnownTechniques): "eager", the worker's own modules;
  // "torchscript", traced by its torch's python and run as TorchScript; "aoti", exported
  // and compiled into an AOTInductor package on the host that runs it (a `.pt2`,
  // cached by content); "cuda_graph", one forward pass captured into a CUDA graph and
  // replayed (device cuda). Inference only.
  std::string technique = "eager";
  std::int64_t batch_size = 0;
  std::int64_t threads = 0;
  std::int64_t interop_threads = 1;
  bool onednn = true;  // let ATen use oneDNN (mkldnn) kernels
  // How idle OpenMP threads wait (KnownOmpWaitPolicies): "default" leaves the runtime's
  // own behaviour (libgomp spins a while, then sleeps), as a user's PyTorch runs.
  std::string omp_wait_policy = "default";
  // After timing, record one block of iterations with LibTorch's profiler: the
  // operators that took the most self time (schemas/worker.md, op_profile).
  bool profile = false;
  // mode "train": recompute each block's activations in backward instead of keeping
  // them (activation checkpointing of the mlp's layers, the cnn's residual blocks, the
  // transformer's encoder layers).
  bool checkpointing = false;
  std::uint64_t seed = 0;
  TimingSpec timing;
  // Repeats in fresh processes (schemas/sweep.md, Processes): the coordinator hands the
  // job out `processes` times, one worker process each, and combines their results; the
  // worker runs one process either way. With `precision` (a fraction of the median, in
  // (0, 1)), it stops once the interval across processes is that narrow, `processes`
  // (or kPrecisionMaxProcesses) at most.
  std::int64_t processes = 1;
  std::optional<double> precision;
  // The agent's check of the host before timing (agent/host_check.h): "record" it with
  // the result, "wait" for a quiet host (at most a minute), or "refuse" to run on a
  // busy one (KnownHostCheckPolicies).
  std::string host_check = "record";
  // A slowdown dialled on purpose (schemas/worker.md, Slowdown): every iteration is
  // followed by fixed arithmetic worth this fraction of an iteration, in [0,
  // kMaxSlowdown]; 0 runs the job as it is. Not part of what a result is keyed on (its
  // series, compare's configuration), so the same job slowed compares with itself.
  double slowdown = 0;
  // An in-process pair (schemas/worker.md, Versus): the agent's `versus` object on side A
  // of a paired comparison run in one worker: side B's job, whose blocks of samples
  // alternate with this one's, and which of the two times the first block.
  std::shared_ptr<const JobSpec> versus_b;
  bool versus_b_first = false;
};
// The largest slowdown a job may ask for: doubling its time is a test of the tool, more
// is a typo.
inline constexpr double kMaxSlowdown = 1.0;
const std::vector<std::string>& KnownHostCheckPolicies();

// Why a job was refused: the job field at fault ("dtype", "model_args.layers[1]",
// "timing.min_time_s"; empty for the job as a whole) and a message that names the
// field and what it accepts.
struct JobSpecError {
  std::string field;
  std::string message;
};

// True for a job the coordinator may run in several processes: one worker process that
// times one model (no gang, replicas or batch search).
bool RunsInOneProcess(const JobSpec& spec);
// Reads `processes` (1..kMaxJobProcesses) and `precision` ((0, 1)) of a job or a sweep,
// each where present; a refusal names the field.
bool ReadRepeats(const nlohmann::json& holder, std::int64_t* processes,
                 std::optional<double>* precision, JobSpecError* error);

// Validates `job` (the job JSON of schemas/worker.md). On failure returns nullopt and
// fills *error. Unknown top-level keys are ignored (the coordinator may annotate jobs);
// unknown keys inside model_args and timing are errors, because a typo there would
// silently change what is measured.
std::optional<JobSpec> ParseJobSpec(const nlohmann::json& job, JobSpecError* error);

// The same rules without the job's identity (job_id, attempt are not required): what
// every combination of a sweep must satisfy.
std::optional<JobSpec> ParseJobConfig(const nlohmann::json& job, JobSpecError* error);

// Validates a `timing` object on top of the defaults in *timing; a refused one leaves
// *timing as it was.
bool ParseTiming(const nlohmann::json& timing, TimingSpec* out, JobSpecError* error);

// The accepted values, in the order error messages list them.
const std::vector<std::string>& KnownModels();
// How deeply a built-in model's argument nests: 0 a number or a string, 1 a list of
// integers (mlp.layers, cnn.blocks), 2 a list of shapes (a file's inputs); none for
// an argument the model does not have. In a sweep, models.<model>.<arg> nested one
// level deeper is an axis of that argument's values (schemas/sweep.md).
std::optional<int> ModelArgDepth(const std::string& model, const std::string& arg);
const std::vector<std::string>& KnownModes();
const std::vector<std::string>& KnownDtypes();
// "default", "passive", "active".
const std::vector<std::string>& KnownOmpWaitPolicies();

// The OMP_WAIT_POLICY a job's worker starts with for `policy` (one of
// KnownOmpWaitPolicies): "PASSIVE", "ACTIVE", or nullopt for "default" (the variable
// unset). The OpenMP runtime reads it once, before main, so it is set at exec.
std::optional<std::string> OmpWaitPolicyVariable(const std::string& policy);
// The policy a job's JSON as stored names (validated by ParseJobConfig beforehand);
// "default" when it names none.
std::string JobOmpWaitPolicy(const nlohmann::json& job);

// The ranks a job runs on: distributed.world_size, else parallel's world size (a
// pipeline's stages); 1 for a job of one process. What the fleet must do for it is
// JobNeeds (common/job_needs.h).
std::int64_t JobWorldSize(const JobSpec& spec);

// A job's `placement` key and the value that spreads a gang's ranks over agents (the
// sweep's placement, copied into each job of a "spread" sweep).
inline constexpr const char* kSpreadPlacementKey = "placement";
inline constexpr const char* kSpreadPlacement = "spread";

// True for the models that time one collective across ranks (allreduce, broadcast,
// allgather).
bool IsCollectiveModel(const std::string& model);

// "eager", "torchscript", "aoti", "cuda_graph".
const std::vector<std::string>& KnownTechniques();
// The environment variable naming where a worker keeps the files it compiles for the
// technique axis, by content, across jobs (the agent sets it to STATE_DIR/packages);
// unset: $XDG_CACHE_HOME/benchfleet/packages, else ~/.cache/benchfleet/packages.
inline constexpr const char* kPackageCacheVariable = "BENCHFLEET_PACKAGE_CACHE";

// Longest `torch` value accepted ("2.15.0+cu132" is 12).
inline constexpr std::size_t kMaxTorchVersionLength = 64;
// True when `version` (a worker's torch version, "2.15.0" or "2.15.0+cu132") matches
// `prefix` ("2.15", "2.15.0", "1"): equal, or continuing it at a "." or "+". Empty
// matches every version.
bool TorchVersionMatches(const std::string& prefix, const std::string& version);
// -1, 0 or 1 as `a` is older than, the same as or newer than `b`, by their numeric
// components ("2.15.0+cu132" is 2.15.0; a missing component is 0).
int CompareTorchVersions(const std::string& a, const std::string& b);

// True for "cuda" and "cuda:N"; such jobs pass parsing and are refused at run time
// when the LibTorch build or host has no usable GPU.
bool IsCudaDevice(const std::string& device);

}  // namespace benchfleet
