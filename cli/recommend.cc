#include "cli/recommend.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace benchfleet {

namespace {

// Unknown accuracy loss counts as the worst: a configuration whose accuracy was never
// measured against the reference must not look free.
double LossOrWorst(const Candidate& c) { return c.accuracy_loss.value_or(INFINITY); }

bool MeetsConstraints(const Candidate& c, const RecommendOptions& options, std::string* why) {
  if (options.slo_p99_ms && !(c.p99_ms <= *options.slo_p99_ms)) {
    *why = "p99 " + std::to_string(c.p99_ms) + " ms above the SLO";
    return false;
  }
  if (options.max_accuracy_drop && !(LossOrWorst(c) <= *options.max_accuracy_drop)) {
    *why = c.accuracy_loss ? "accuracy loss above the limit" : "accuracy not measured";
    return false;
  }
  return true;
}

// Which of two candidates the user's criterion prefers; ties go to throughput, then to
// the older result (lower job id), so the answer does not depend on row order.
bool Better(const Candidate& a, const Candidate& b, RecommendBy by) {
  auto key = [by](const Candidate& c) -> double {
    switch (by) {
      case RecommendBy::kThroughput:
        return -c.throughput_per_s;
      case RecommendBy::kLatency:
        return c.p99_ms;
      case RecommendBy::kCost:
        return c.cost_per_1m.value_or(INFINITY);
      case RecommendBy::kEnergy:
        return c.joules_per_sample.value_or(INFINITY);
    }
    return 0;
  };
  if (key(a) != key(b)) return key(a) < key(b);
  if (a.throughput_per_s != b.throughput_per_s) return a.throughput_per_s > b.throughput_per_s;
  return a.job_id < b.job_id;
}

}  // namespace

std::string Describe(const Candidate& c) {
  std::ostringstream out;
  out << "job " << c.job_id << " (" << c.device << " " << c.dtype << ", " << c.threads
      << (c.threads == 1 ? " thread" : " threads") << ", batch " << c.batch_size;
  if (c.replicas > 1) out << ", " << c.replicas << " replicas";
  out << ", " << c.scenario << ")";
  return out.str();
}

std::optional<RecommendBy> ParseRecommendBy(const std::string& name) {
  if (name == "throughput") return RecommendBy::kThroughput;
  if (name == "latency") return RecommendBy::kLatency;
  if (name == "cost") return RecommendBy::kCost;
  if (name == "energy") return RecommendBy::kEnergy;
  return std::nullopt;
}

std::vector<Candidate> CandidatesFrom(const RowsReply& reply) {
  using nlohmann::json;
  std::vector<Candidate> out;
  for (const json& row : reply.Objects()) {
    auto cell = [&](const char* column) -> const json& {
      static const json null;
      auto it = row.find(column);
      return it == row.end() ? null : *it;
    };
    auto number = [&](const char* column) {
      const json& v = cell(column);
      return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
    };
    auto text = [&](const char* column) {
      const json& v = cell(column);
      return v.is_string() ? v.get<std::string>() : std::string();
    };
    auto integer = [&](const char* column, int64_t otherwise) {
      const json& v = cell(column);
      return v.is_number_integer() ? v.get<int64_t>() : otherwise;
    };
    const auto throughput = number("capacity_per_s"), p99 = number("latency_p99_ms");
    if (!throughput || !p99) continue;  // nothing to weigh
    Candidate c;
    c.job_id = integer("job_id", 0);
    c.host = text("host");
    c.model = text("model");
    c.device = text("device");
    c.dtype = text("dtype");
    c.scenario = text("scenario");
    c.threads = integer("threads", 0);
    c.batch_size = integer("batch_size", 0);
    c.replicas = integer("replicas", 1);
    c.throughput_per_s = *throughput;
    c.p99_ms = *p99;
    c.median_ms = number("median_ms");
    c.median_ci_low_ms = number("median_ci_low_ms");
    c.median_ci_high_ms = number("median_ci_high_ms");
    c.accuracy_loss = number("accuracy_loss");
    c.cost_per_1m = number("cost_per_1m_samples");
    c.currency = text("currency");
    c.joules_per_sample = number("joules_per_sample");
    c.noisy = integer("noisy", 0) != 0;
    c.stale = integer("stale", 0) != 0;
    out.push_back(std::move(c));
  }
  return out;
}

bool Dominates(const Candidate& a, const Candidate& b) {
  bool better = false;
  auto compare = [&](double x, double y, bool higher_is_better) {
    if (x == y) return true;
    const bool x_better = higher_is_better ? x > y : x < y;
    better |= x_better;
    return x_better;
  };
  if (!compare(a.throughput_per_s, b.throughput_per_s, true)) return false;
  if (!compare(a.p99_ms, b.p99_ms, false)) return false;
  if (!compare(LossOrWorst(a), LossOrWorst(b), false)) return false;
  if (a.cost_per_1m && b.cost_per_1m && a.currency == b.currency &&
      !compare(*a.cost_per_1m, *b.cost_per_1m, false)) {
    return false;
  }
  return better;
}

std::vector<HostRecommendation> Recommend(const std::vector<Candidate>& candidates,
                                          const RecommendOptions& options) {
  std::map<std::string, std::vector<Candidate>> by_host;
  for (const Candidate& c : candidates) by_host[c.host].push_back(c);
  std::vector<HostRecommendation> out;
  for (auto& [host, list] : by_host) {
    HostRecommendation r;
    r.host = host;
    for (const Candidate& c : list) {
      const bool dominated = std::any_of(
          list.begin(), list.end(), [&](const Candidate& other) { return Dominates(other, c); });
      if (!dominated) r.pareto.push_back(c);
    }
    std::sort(r.pareto.begin(), r.pareto.end(),
              [&](const Candidate& a, const Candidate& b) { return Better(a, b, options.by); });
    std::string why_not;
    size_t refused = 0;
    for (const Candidate& c : list) {
      std::string why;
      if (!MeetsConstraints(c, options, &why)) {
        ++refused;
        if (why_not.empty()) why_not = why;
        continue;
      }
      if (!r.best || Better(c, *r.best, options.by)) r.best = c;
    }
    if (!r.best) {
      r.warnings.push_back("no configuration meets the constraints (" + std::to_string(refused) +
                           " of " + std::to_string(list.size()) + " refused; first: " + why_not +
                           ")");
    } else {
      if (options.by == RecommendBy::kCost && !r.best->cost_per_1m) {
        r.warnings.push_back(
            "the host has no price (benchfleet host set-price): cost could not decide");
      }
      if (options.by == RecommendBy::kEnergy && !r.best->joules_per_sample) {
        r.warnings.push_back("no energy counter on this host: energy could not decide");
      }
      if (r.best->noisy) {
        r.warnings.push_back(
            Describe(*r.best) +
            " is noisy: its median's 95% interval stayed wider than the sweep's target_ci");
      }
      if (r.best->stale) {
        r.warnings.push_back(Describe(*r.best) +
                             " is stale: measured before the host's last fingerprint change");
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json CandidateJson(const Candidate& c) {
  auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return nlohmann::json{
      {"job_id", c.job_id},
      {"model", c.model},
      {"device", c.device},
      {"dtype", c.dtype},
      {"threads", c.threads},
      {"batch_size", c.batch_size},
      {"replicas", c.replicas},
      {"scenario", c.scenario},
      {"throughput_per_s", c.throughput_per_s},
      {"p99_ms", c.p99_ms},
      {"median_ms", optional(c.median_ms)},
      {"median_ci_low_ms", optional(c.median_ci_low_ms)},
      {"median_ci_high_ms", optional(c.median_ci_high_ms)},
      {"accuracy_loss", optional(c.accuracy_loss)},
      {"cost_per_1m_samples", optional(c.cost_per_1m)},
      {"currency", c.currency.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.currency)},
      {"joules_per_sample", optional(c.joules_per_sample)},
      {"noisy", c.noisy},
      {"stale", c.stale}};
}

nlohmann::json ToJson(const HostRecommendation& r) {
  nlohmann::json pareto = nlohmann::json::array();
  for (const Candidate& c : r.pareto) pareto.push_back(CandidateJson(c));
  return {{"host", r.host},
          {"best", r.best ? CandidateJson(*r.best) : nlohmann::json(nullptr)},
          {"pareto", pareto},
          {"warnings", r.warnings}};
}

}  // namespace benchfleet
