// `benchfleet recommend`: from a model's results, the configurations worth running on
// each host — the Pareto-optimal ones over throughput, p99 latency, accuracy loss and
// cost — and the best one under the user's constraints, each citing the result row it
// rests on and warning where that row is noisy or stale (docs/results.md, Recommend).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/client_replies.h"

namespace benchfleet {

// One result a recommendation may rest on, as recommend's query reads it.
struct Candidate {
  int64_t job_id = 0;
  std::string host, model;
  std::string device, dtype, scenario;  // scenario: offline, single_stream or server
  int64_t threads = 0, batch_size = 0, replicas = 1;
  double throughput_per_s = 0;  // samples/s; a server run: its highest rate within its SLO
  double p99_ms = 0;            // a server run: from arrival; otherwise one batch's p99
  // One batch's median and its 95% confidence interval (null where there was none).
  std::optional<double> median_ms, median_ci_low_ms, median_ci_high_ms;
  std::optional<double> accuracy_loss;  // 1 - top1_agreement, else rel_err; 0 for fp32
  std::optional<double> cost_per_1m;    // null: the host has no price
  std::optional<double> joules_per_sample;
  std::string currency;
  bool noisy = false;
  bool stale = false;  // measured before its host's last fingerprint change
};

// "job 3 (cpu fp32, 1 thread, batch 32, offline)": how output and warnings name one.
std::string Describe(const Candidate& c);

enum class RecommendBy { kThroughput, kLatency, kCost, kEnergy };
std::optional<RecommendBy> ParseRecommendBy(const std::string& name);

struct RecommendOptions {
  std::optional<double> slo_p99_ms;
  std::optional<double> max_accuracy_drop;
  RecommendBy by = RecommendBy::kThroughput;
};

struct HostRecommendation {
  std::string host;
  std::vector<Candidate> pareto;  // none dominated by another of the host's, best first
  std::optional<Candidate> best;  // within the constraints, by options.by
  std::vector<std::string> warnings;
};

// True when `a` is at least as good as `b` on every objective and better on one:
// throughput (higher), p99 (lower), accuracy loss (lower; unknown counts as worst) and
// cost (lower; compared only when both are priced in one currency).
bool Dominates(const Candidate& a, const Candidate& b);

// Per host, in host order: the Pareto set of its candidates and the best one that meets
// the constraints. A host none of whose candidates meets them has no `best` and says why.
std::vector<HostRecommendation> Recommend(const std::vector<Candidate>& candidates,
                                          const RecommendOptions& options);

// The candidates of a reply to CandidatesOfModelSql or CandidatesOfSweepsSql
// (cli/queries.h), read by column name; a row without a throughput or a latency has
// nothing to weigh and is left out.
std::vector<Candidate> CandidatesFrom(const RowsReply& reply);

// A candidate as JSON (its configuration, figures and flags), and a host's answer.
nlohmann::json CandidateJson(const Candidate& candidate);
nlohmann::json ToJson(const HostRecommendation& recommendation);

}  // namespace benchfleet
