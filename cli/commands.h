// The benchfleet commands. Each returns the process exit code: 0 success, 1 failure
// (the coordinator unreachable, a job failed, a store file that cannot be read), 2 bad
// input (nothing was sent or enqueued; a --db file that is missing or not a benchfleet
// store). The CI gates, compare and regressions, follow diff's convention instead
// (kExitFound, kExitCannotCompare). The read commands take a Reads (cli/reads.h): the
// coordinator's, or a store file's with --db.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/format.h"
#include "cli/reads.h"
#include "cli/recommend.h"
#include "cli/results_table.h"
#include "common/curve.h"

namespace benchfleet {

struct ClientOptions {
  std::string coordinator;  // the coordinator's client endpoint
  int timeout_ms;
  std::optional<CurveClientKeys> curve;  // when the coordinator serves CURVE
};

// Writes PREFIX.key and PREFIX.pub (a new CURVE key pair).
int KeygenCommand(const std::string& prefix, bool force);

struct SubmitOptions {
  std::string file;
  bool wait = false;
  double wait_timeout_s = 0;  // 0: wait as long as it takes
  // Sent with the submit; a resend with the same id returns the sweep stored the first
  // time. Empty: a fresh random one.
  std::string submission_id;
  std::vector<std::string> labels;  // KEY=VALUE, put into the sweep's labels
};

// Exit status of `submit --wait` when no registered agent can run the sweep's jobs.
inline constexpr int kExitNoAgentCanRun = 3;

// compare and regressions, as diff, grep and google/benchmark's compare do: 0 compared
// and nothing their --fail-on names was found; kExitFound: it was; kExitCannotCompare:
// they could not compare at all (bad flags, an unknown sweep, no configuration in
// common, no coordinator, a store that cannot be read). docs/results.md, CI gates.
inline constexpr int kExitFound = 1;
inline constexpr int kExitCannotCompare = 2;

int SubmitCommand(const ClientOptions& client, const SubmitOptions& options);
int StatusCommand(const ClientOptions& client, std::optional<int64_t> sweep_id, RowFormat format);
int ResultsCommand(Reads& reads, std::optional<int64_t> sweep_id, RowFormat format,
                   const ResultColumnChoice& columns);
int QueryCommand(Reads& reads, const std::string& sql, RowFormat format);
int CancelCommand(const ClientOptions& client, int64_t sweep_id);

// "90d", "12h", "30m", "45s" or a plain number of seconds -> seconds.
StatusOr<double> ParseAge(const std::string& text);
// Drops raw samples older than `age` (ParseAge) and waits for the coordinator's answer.
int PruneCommand(ClientOptions client, const std::string& age, double wait_timeout_s);
// Queues a calibration of the named agents (all when empty); --wait as for submit.
int CalibrateCommand(const ClientOptions& client, const std::vector<std::string>& agents,
                     bool wait);

// Confirmed regressions and improvements decided within `since` (ParseAge; empty: all),
// from the view confirmed_regressions (docs/regressions.md). With `fail_on_confirmed`
// (--fail-on confirmed, a CI gate) the exit status is 1 when any confirmed regression
// (slower, not an improvement) is among them, the output unchanged.
int RegressionsCommand(Reads& reads, const std::string& since, RowFormat format,
                       bool fail_on_confirmed);
// Marks a known step in the series of `host`, of `model`, or both (empty: every).
// `benchfleet host set-price HOST PRICE`: what an hour of the host costs from now on.
int SetPriceCommand(const ClientOptions& client, const std::string& host, double per_hour,
                    const std::string& currency);

// `benchfleet recommend --model M`: per host, the Pareto-optimal configurations of M's
// inference results and the best under the constraints (cli/recommend.h).
int RecommendCommand(Reads& reads, const std::string& model, const RecommendOptions& options,
                     RowFormat format);

int BaselineResetCommand(const ClientOptions& client, const std::string& host,
                         const std::string& model, const std::string& note);

// `benchfleet compare A [B]` (docs/results.md, Compare): with two sweeps, every
// configuration both ran, B against A, tested on the raw samples (Mann-Whitney U,
// p < 0.002, ratio beyond `ratio`) and marked faster, slower or unchanged; with `rows`
// and `cols`, the sweeps' medians pivoted with their noise and the ratio to a baseline
// column. With `fail_on_slower` (--fail-on slower, a CI gate; two sweeps only) the exit
// status is 1 when any configuration is slower in B, the output unchanged.
struct CompareOptions {
  std::vector<int64_t> sweeps;    // one or two
  std::vector<std::string> rows;  // pivot: model, batch_size, mode, dtype, threads, device, host
  std::string cols;               // pivot: host, device, dtype, threads or sweep
  std::string baseline;           // pivot: the column value ratios are to (default: the first)
  double ratio = 1.05;
  bool fail_on_slower = false;
};
// Exits kExitFound or kExitCannotCompare as above.
int CompareCommand(Reads& reads, const CompareOptions& options, RowFormat format);

// `benchfleet schedule ACTION` (docs/schedules.md): add, list, remove, run-now, history.
struct ScheduleOptions {
  std::string action;  // add, list, remove, run-now, history
  std::string name;
  std::string cron;
  std::string tz = "UTC";
  std::string file;  // add: the sweep file
  std::string overlap = "skip";
  std::optional<double> start_deadline_s;
  int limit = 100;                  // history
  std::vector<std::string> labels;  // add: KEY=VALUE, put into the sweep's labels
};
int ScheduleCommand(const ClientOptions& client, const ScheduleOptions& options, RowFormat format);

// `benchfleet merge OUT STORE...` (docs/sites.md, cli/merge.h): the stores, each PATH or
// NAME=PATH, merged into OUT; prints what each added. Exit 2 for a store refused (not a
// benchfleet store, another schema version, open in another process, ...), 1 when
// writing failed; OUT is as it was either way.
int MergeCommand(const std::string& out, const std::vector<std::string>& stores);

// The comparison views `results --view` can show (docs/results.md): their names, and
// the --view help naming what each is.
std::vector<std::string> ResultViews();
std::string ResultViewsHelp();
int ViewCommand(Reads& reads, const std::string& view, std::optional<int64_t> sweep_id,
                RowFormat format);

}  // namespace benchfleet
