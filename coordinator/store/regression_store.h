// The store's side of regression detection (coordinator/store/store.h, docs/regressions.md):
// a series' baseline window, the candidates and their confirming reruns, and the
// baseline resets. The decisions are the judge's (coordinator/results/regression_judge.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "coordinator/store/job_queue.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

using nlohmann::json;

// A stored result as regression detection sees it (coordinator/results/regression_judge.h).
struct JudgedResult {
  int64_t job_id = 0;
  int64_t host_id = 0;
  std::string host;
  std::string model;
  std::string series;  // empty: none (a host without fingerprint)
  std::optional<double> median_ms;
  // The median's 95% confidence interval (stats.median_ci_*_ms), when it had one.
  std::optional<double> median_ci_low_ms, median_ci_high_ms;
  bool ok = false;
  bool unsteady = false;                   // its statistics may mix two regimes: never judged
  std::optional<int64_t> confirms_job_id;  // a rerun confirming that job's candidate
  int64_t sweep_id = 0;
  std::optional<double> host_pace_ms;  // the host's pace before it ran (agent/host_pace.h)
};
// The host's pace over some nights: each of their sweeps' results' on the host
// (host_pace_ms, itself the geometric mean of its processes' readings).
struct NightPace {
  std::vector<double> paces_ms;
  double mean_ms() const;  // their geometric mean; 0 for none
  int64_t results() const { return static_cast<int64_t>(paces_ms.size()); }
};
struct BaselinePoint {
  int64_t job_id = 0;
  double median_ms = 0;
  std::string received_at;
  int64_t sweep_id = 0;
};
// A regression candidate as detected (the regressions table).
struct RegressionCandidate {
  int64_t job_id = 0;
  std::string series;
  int64_t host_id = 0;
  bool slower = true;
  double median_ms = 0;
  double baseline_median_ms = 0;
  double baseline_mad_ms = 0;
  int64_t baseline_n = 0;
  std::string baseline_from, baseline_to;
  double change = 0;
  std::optional<double> z;
  // The judged result's median interval, which widens the noise z is measured in.
  std::optional<double> median_ci_low_ms, median_ci_high_ms;
  // The host's pace of the judged result and the baseline's (the geometric mean of its
  // results' that have one, each of which is kept): a change the host's pace explains
  // beyond its noise is decided "host".
  std::optional<double> host_pace_ms, baseline_host_pace_ms;
  std::vector<double> baseline_host_paces_ms;
  // The smallest relative change a candidate of this series could be (the judge's two
  // tests at this baseline): what a confirmed regression says the series can detect.
  std::optional<double> detectable_change;
};
struct Rerun {
  int64_t job_id = 0;
  std::string state;                // the job's
  std::optional<double> median_ms;  // an ok result's
};

class RegressionStore {
 public:
  RegressionStore(Database& db, JobQueue& jobs) : db_(&db), jobs_(&jobs) {}

  // The sweep file's "regression" object, or null (read apart from the sweep, whose
  // matrix may hold 100,000 values).
  StatusOr<json> SweepRegressionPolicy(int64_t sweep_id);
  // The last `window` good results of the series before job `before_job_id` (ok, not
  // unsteady, after the latest baseline reset covering `host` and `model`, and from the
  // series' latest confirmed change on: that candidate and its reruns start the new
  // level; no other confirming rerun; no result decided the host's), newest first.
  StatusOr<std::vector<BaselinePoint>> SeriesBaseline(const std::string& series,
                                                      int64_t before_job_id, int window,
                                                      const std::string& host,
                                                      const std::string& model);
  // Records the candidate and queues `reruns` runs of its job on its host, in its
  // sweep (which runs on until they are done). Returns the reruns' job ids.
  StatusOr<std::vector<int64_t>> AddRegressionCandidate(const RegressionCandidate& candidate,
                                                        const std::string& host, int reruns);
  StatusOr<std::optional<RegressionCandidate>> CandidateOf(int64_t job_id);
  // Whether the series has a candidate whose reruns are still undecided.
  StatusOr<bool> SeriesHasOpenCandidate(const std::string& series);
  StatusOr<std::vector<Rerun>> RerunsOf(int64_t job_id);
  // The host's pace over the night of candidate `job_id`: its sweep's results on its host
  // that have one (its reruns included).
  StatusOr<NightPace> NightHostPace(int64_t job_id);
  // The same over the sweeps `sweep_ids` (a baseline's nights) on host `host_id`.
  StatusOr<NightPace> HostPaceOfSweeps(int64_t host_id, const std::vector<int64_t>& sweep_ids);
  // `state`: confirmed, noise or host. `night_pace_ms`, where known, replaces the
  // candidate's own pace (and its change from the baseline's is recorded).
  Status DecideRegression(int64_t job_id, const std::string& state,
                          std::optional<double> rerun_median_ms, const std::string& reason,
                          std::optional<double> night_pace_ms = std::nullopt);
  StatusOr<json> AddBaselineReset(const std::string& host, const std::string& model,
                                  const std::string& note);

 private:
  Database* db_;
  JobQueue* jobs_;  // queues the reruns
};

}  // namespace benchfleet
