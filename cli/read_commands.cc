// The commands that read: status, results, query, the views, recommend, regressions.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "cli/ci_output.h"
#include "cli/client.h"
#include "cli/command_support.h"
#include "cli/compare.h"
#include "cli/model_upload.h"
#include "cli/queries.h"
#include "cli/results_table.h"
#include "common/client_replies.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/host_pace.h"
#include "common/job_spec.h"
#include "common/median.h"
#include "common/messages.h"
#include "common/model_files.h"
#include "common/result_fields.h"
#include "common/status_reply.h"
#include "common/sweep.h"

namespace benchfleet {

int StatusCommand(const ClientOptions& client_options, std::optional<int64_t> sweep_id,
                  RowFormat format) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = ReadStatus(**client, sweep_id);
  if (!reply.ok()) return Fail(reply.status());
  if (format == RowFormat::kJson) {
    json body = reply->ToJson();
    for (const char* envelope : {"v", "type", "request_id"}) body.erase(envelope);
    std::cout << body.dump(2) << "\n";
    return 0;
  }
  json sweep_rows = json::array();
  for (const SweepOverview& s : reply->sweeps) {
    const SweepJobCounts& j = s.jobs;
    sweep_rows.push_back({s.sweep_id, s.name, s.state, j.total, j.queued, j.running, j.done,
                          j.failed, j.cancelled, s.eta_s ? json(Duration(*s.eta_s)) : json(nullptr),
                          s.created_at, LabelsText(s.labels)});
  }
  std::cout << "sweeps\n"
            << FormatRows({"sweep_id", "name", "state", "jobs", "queued", "running", "done",
                           "failed", "cancelled", "eta", "created_at", "labels"},
                          sweep_rows, format);
  // Which job runs where, and for how long.
  const int64_t now_us = UnixMicrosNow();
  json agent_rows = json::array();
  for (const AgentState& a : reply->agents) {
    json what = nullptr, sweep = nullptr, running = nullptr;
    if (a.job) {
      const RunningJobSummary& job = *a.job;
      sweep = job.sweep_id;
      auto text = [](const std::optional<std::string>& v) { return v.value_or("null"); };
      auto number = [](const std::optional<int64_t>& v) {
        return v ? std::to_string(*v) : std::string("null");
      };
      what = job.kind == "calibration"
                 ? "calibration"
                 : text(job.model) + " " + text(job.mode) + " " + text(job.dtype) + " batch " +
                       number(job.batch_size) + " threads " + number(job.threads) + " on " +
                       job.device;
      int64_t started_us = 0;
      if (ParseUtcIso8601(job.started_at, &started_us)) {
        running = Duration(static_cast<double>(now_us - started_us) / 1e6);
      }
    }
    agent_rows.push_back({a.agent, a.Busy() ? "busy" : "idle",
                          a.job_id ? json(*a.job_id) : json(nullptr), sweep, what, running,
                          a.last_seen_ms_ago});
  }
  std::cout << "\nagents\n"
            << FormatRows({"agent", "state", "job_id", "sweep_id", "job", "running_for",
                           "last_seen_ms_ago"},
                          agent_rows, format);
  if (!reply->waiting.empty()) {
    std::cout << "\nwaiting\n";
    for (const WaitingRequirement& w : reply->waiting) std::cout << "  " << w.reason << "\n";
  }
  if (!reply->departed.empty()) {
    std::cout << "\nagents gone\n";
    for (const DepartedAgent& d : reply->departed) {
      std::cout << "  " << d.agent << " at " << d.at << ": " << d.reason << "\n";
    }
  }
  if (format == RowFormat::kTable) {
    std::cout << "\ncounters";
    for (const auto& [name, value] : reply->counters.Named())
      std::cout << "  " << name << "=" << value;
    std::cout << "\n";
  }
  return 0;
}

int ResultsCommand(Reads& reads, std::optional<int64_t> sweep_id, RowFormat format,
                   const ResultColumnChoice& columns) {
  auto rows = reads.ResultSummary(sweep_id);
  if (!rows.ok()) return Fail(rows.status());
  // Which columns, and the compact table's derived cells: cli/results_table.h.
  auto shown = ChooseResultColumns(rows->columns, json(rows->rows), format, columns);
  if (!shown.ok()) return Fail(shown.status());
  RowsReply table = LocalRows(std::move(shown->columns), shown->rows);
  table.truncated = rows->truncated;
  PrintRows(table, format);
  return 0;
}

int QueryCommand(Reads& reads, const std::string& sql, RowFormat format) {
  auto rows = reads.Query(sql);
  if (!rows.ok()) return Fail(rows.status());
  PrintRows(*rows, format);
  return 0;
}

std::vector<std::string> ResultViews() {
  std::vector<std::string> names;
  for (const ResultView& v : ResultViewTable()) names.push_back(v.name);
  return names;
}

std::string ResultViewsHelp() {
  std::string help;
  for (const ResultView& v : ResultViewTable()) {
    help += (help.empty() ? "" : ", ") + std::string(v.name) + " (" + v.what + ")";
  }
  return help;
}

int ViewCommand(Reads& reads, const std::string& view, std::optional<int64_t> sweep_id,
                RowFormat format) {
  if (view == "summary") return ResultsCommand(reads, sweep_id, format, ResultColumnChoice{});
  const auto& views = ResultViewTable();
  auto it =
      std::find_if(views.begin(), views.end(), [&](const ResultView& v) { return view == v.name; });
  if (it == views.end()) {
    std::string names;
    for (const ResultView& v : views) names += (names.empty() ? "" : ", ") + std::string(v.name);
    return Fail(InvalidArgument("--view must be one of " + names + ", got \"" + view + "\""));
  }
  return QueryCommand(reads, ResultViewSql(*it, sweep_id), format);
}

int RecommendCommand(Reads& reads, const std::string& model, const RecommendOptions& options,
                     RowFormat format) {
  if (std::find(KnownModels().begin(), KnownModels().end(), model) == KnownModels().end()) {
    return Fail(InvalidArgument("--model: unknown model \"" + model + "\""));
  }
  // A known model name needs no quoting.
  auto reply = reads.Query(CandidatesOfModelSql(model));
  if (!reply.ok()) return Fail(reply.status());
  const std::vector<Candidate> candidates = CandidatesFrom(*reply);
  if (candidates.empty()) return Fail(NotFound("no successful inference result of model " + model));
  const std::vector<HostRecommendation> recommendations = Recommend(candidates, options);
  if (format == RowFormat::kJson) {
    json out = json::array();
    for (const HostRecommendation& r : recommendations) out.push_back(ToJson(r));
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  const std::vector<std::string> columns = {"job_id",
                                            "device",
                                            "dtype",
                                            "threads",
                                            "batch_size",
                                            "replicas",
                                            "scenario",
                                            "throughput_per_s",
                                            "p99_ms",
                                            "median_ms",
                                            "median_ci_low_ms",
                                            "median_ci_high_ms",
                                            "accuracy_loss",
                                            "cost_per_1m_samples",
                                            "noisy",
                                            "stale"};
  for (const HostRecommendation& r : recommendations) {
    json rows = json::array();
    for (const Candidate& c : r.pareto) {
      const json j = CandidateJson(c);
      json row = json::array();
      for (const std::string& column : columns) row.push_back(j[column]);
      rows.push_back(row);
    }
    std::cout << "host " << r.host << ": ";
    if (r.best) {
      std::cout << "best is " << Describe(*r.best) << "\n";
    } else {
      std::cout << "no recommendation\n";
    }
    for (const std::string& warning : r.warnings) std::cout << "  warning: " << warning << "\n";
    std::cout << "  Pareto-optimal (throughput, p99, accuracy loss, cost):\n";
    std::cout << FormatRows(columns, rows, format) << "\n";
  }
  return 0;
}

int RegressionsCommand(Reads& reads, const std::string& since, RowFormat format,
                       bool fail_on_confirmed) {
  std::optional<int64_t> within_s;
  if (!since.empty()) {
    auto seconds = ParseAge(since);
    if (!seconds.ok()) return CannotCompare(seconds.status());
    within_s = static_cast<int64_t>(*seconds);
  }
  auto reply = reads.Query(ConfirmedRegressionsSql(within_s));
  if (!reply.ok()) return CannotCompare(reply.status());
  const int gate = fail_on_confirmed && CountRegressions(*reply) > 0 ? kExitFound : 0;
  if (format == RowFormat::kJunit) {
    std::cout << RegressionsJunit(*reply, since);
    return gate;
  }
  if (reply->rows.empty() && (format == RowFormat::kTable || format == RowFormat::kMarkdown)) {
    std::cout << "no confirmed regression or improvement"
              << (since.empty() ? "" : " in the last " + since) << "\n";
    return gate;
  }
  if (format == RowFormat::kMarkdown) {
    const int regressions = CountRegressions(*reply);
    std::cout << "**" << regressions << " regression(s), "
              << static_cast<int>(reply->rows.size()) - regressions << " improvement(s)**\n\n";
  }
  PrintRows(*reply, format);
  return gate;
}

}  // namespace benchfleet
