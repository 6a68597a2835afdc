#include "cli/commands.h"

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
#include "cli/compare.h"
#include "common/host_pace.h"
#include "cli/model_upload.h"
#include "cli/queries.h"
#include "cli/results_table.h"
#include "common/client_replies.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/job_spec.h"
#include "common/messages.h"
#include "common/model_files.h"
#include "common/median.h"
#include "common/result_fields.h"
#include "common/status_reply.h"
#include "common/sweep.h"

namespace benchfleet {
namespace {

// How often `submit --wait` asks for progress.
constexpr int kProgressPollMs = 250;
constexpr int kProgressBarWidth = 30;

// Submits tried with one submission id before the CLI gives up (safe: a resend never
// makes a second sweep).
constexpr int kSubmitTries = 3;

// A random id for one submission: 64 bits from the OS.
std::string NewSubmissionId() {
  std::random_device random;
  char id[32];
  snprintf(id, sizeof id, "cli-%08x%08x", random(), random());
  return id;
}

int Fail(const Status& status) {
  std::cerr << "benchfleet: " << status.message() << "\n";
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

StatusOr<std::unique_ptr<CoordinatorClient>> Connect(const ClientOptions& client) {
  return CoordinatorClient::Connect(client.coordinator, client.timeout_ms,
                                   client.curve ? &*client.curve : nullptr);
}

// A reply that must be `rows`, read into its struct.
StatusOr<RowsReply> ReadRows(const StatusOr<Message>& reply) {
  if (!reply.ok()) return reply.status();
  if (reply->type != msg::kRows) return Internal("expected a rows reply, got " + reply->type);
  return RowsReply::FromJson(reply->body);
}

// The rows a read-only statement returns (a `query` request).
StatusOr<RowsReply> QueryRows(CoordinatorClient& client, const std::string& sql) {
  return ReadRows(client.Call(msg::kQuery, QueryRequest{sql}.ToJson()));
}

// The coordinator's status, of one sweep or of the latest ones.
StatusOr<StatusReply> ReadStatus(CoordinatorClient& client, std::optional<int64_t> sweep_id) {
  auto reply = client.Call(msg::kStatus, SweepRequest{sweep_id}.ToJson());
  if (!reply.ok()) return reply.status();
  if (reply->type != msg::kStatusReply) return Internal("expected a status reply, got " + reply->type);
  return StatusReply::FromJson(reply->body);
}

// Rows the CLI computed itself, printed as a reply's are.
RowsReply LocalRows(std::vector<std::string> columns, const json& rows) {
  return RowsReply{nullptr, std::move(columns), std::vector<json>(rows.begin(), rows.end()), false};
}

void PrintRows(const RowsReply& reply, RowFormat format, const std::vector<std::string>& only = {}) {
  std::vector<std::string> columns = reply.columns;
  json rows(reply.rows);
  if (!only.empty() && format == RowFormat::kTable) {
    std::vector<size_t> keep;
    for (const auto& name : only) {
      for (size_t c = 0; c < columns.size(); ++c) {
        if (columns[c] == name) keep.push_back(c);
      }
    }
    json narrowed = json::array();
    for (const auto& row : rows) {
      json line = json::array();
      for (size_t c : keep) line.push_back(row[c]);
      narrowed.push_back(std::move(line));
    }
    std::vector<std::string> names;
    for (size_t c : keep) names.push_back(columns[c]);
    columns = names;
    rows = narrowed;
  }
  std::cout << FormatRows(columns, rows, format);
  if (reply.truncated) {
    std::cerr << "benchfleet: output truncated to " << rows.size() << " rows\n";
  }
}

std::string ProgressLine(const SweepOverview& sweep, double elapsed_s) {
  const SweepJobCounts& jobs = sweep.jobs;
  const int64_t total = jobs.total, failed = jobs.failed, running = jobs.running;
  const int64_t ended = total - jobs.Unfinished();
  int filled = total > 0 ? static_cast<int>(kProgressBarWidth * ended / total) : kProgressBarWidth;
  std::string bar =
      "[" + std::string(filled, '#') + std::string(kProgressBarWidth - filled, '.') + "]";
  char line[256];
  snprintf(line, sizeof line, "%s %lld/%lld jobs  running %lld  failed %lld  %.0fs", bar.c_str(),
           static_cast<long long>(ended), static_cast<long long>(total),
           static_cast<long long>(running), static_cast<long long>(failed), elapsed_s);
  return line;
}

int WaitForSweep(CoordinatorClient& client, int64_t sweep_id, double timeout_s) {
  const bool tty = isatty(STDERR_FILENO);
  MonoTime start = MonoNow();
  std::string last_line;
  while (true) {
    auto reply = ReadStatus(client, sweep_id);
    if (reply.ok() && reply->sweeps.empty()) reply = Internal("the status names no sweep " + std::to_string(sweep_id));
    if (!reply.ok()) {
      if (tty) std::cerr << "\n";
      return Fail(reply.status());
    }
    const SweepOverview& sweep = reply->sweeps.front();
    double elapsed = std::chrono::duration<double>(MonoNow() - start).count();
    std::string line = ProgressLine(sweep, elapsed);
    // On a terminal the bar redraws in place; in a log, a line only when counts change.
    std::string counts = line.substr(0, line.rfind("  "));
    if (tty) {
      std::cerr << "\r" << line << std::flush;
    } else if (counts != last_line) {
      std::cerr << line << "\n";
    }
    last_line = counts;
    if (sweep.state != "running") {
      if (tty) std::cerr << "\n";
      const int64_t failed = sweep.jobs.failed;
      if (failed > 0) {
        std::cerr << "benchfleet: " << failed << " job(s) of sweep " << sweep_id
                  << " failed; see: benchfleet query \"select job_id, host, error from "
                     "job_failures where sweep_id = "
                  << sweep_id << "\"\n";
        return 1;
      }
      std::cerr << "sweep " << sweep_id << " " << sweep.state << "\n";
      return sweep.state == "done" ? 0 : 1;
    }
    // Jobs that no registered agent can run would wait for ever: say so and stop.
    const std::vector<WaitingRequirement>& waiting = reply->waiting;
    const bool stuck = sweep.jobs.running == 0 && sweep.jobs.queued > 0 && !waiting.empty() &&
                       std::all_of(waiting.begin(), waiting.end(),
                                   [](const WaitingRequirement& w) { return w.matching_agents == 0; });
    if (stuck) {
      if (tty) std::cerr << "\n";
      for (const WaitingRequirement& w : waiting) std::cerr << "benchfleet: " << w.reason << "\n";
      std::cerr << "benchfleet: no registered agent can run the queued jobs of sweep " << sweep_id
                << "; they stay queued until one registers (benchfleet status shows them)\n";
      return kExitNoAgentCanRun;
    }
    if (timeout_s > 0 && elapsed > timeout_s) {
      if (tty) std::cerr << "\n";
      std::cerr << "benchfleet: sweep " << sweep_id << " still running after " << timeout_s
                << " s; it goes on (see benchfleet status)\n";
      return 1;
    }
    usleep(kProgressPollMs * 1000);
  }
}

}  // namespace

namespace {

// The sweep file at `path`, checked here first so a user gets the error without a round
// trip (the coordinator checks again: it trusts no client); `outcome` ends the message
// of a bad one ("nothing was enqueued").
// The sweep file, with --label KEY=VALUE pairs put into its labels (over the file's own).
StatusOr<Sweep> ReadSweepFile(const std::string& path, const std::string& outcome,
                              const std::vector<std::string>& labels = {}) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return InvalidArgument("cannot read sweep file: " + text.status().message());
  auto document = ParseSweepJson(*text);
  if (!document.ok()) return InvalidArgument(path + ": " + document.status().message() + "; " + outcome);
  // A model file named by a relative path is beside the sweep file.
  ResolveModelPaths(&*document, std::filesystem::absolute(path).parent_path().string());
  if (!labels.empty() && document->is_object()) {
    if (!document->contains("labels")) (*document)["labels"] = json::object();
    for (const std::string& label : labels) {
      const size_t eq = label.find('=');
      if (eq == std::string::npos || eq == 0) {
        return InvalidArgument("--label " + label + ": must be KEY=VALUE, e.g. --label commit=abc123; " + outcome);
      }
      if ((*document)["labels"].is_object()) (*document)["labels"][label.substr(0, eq)] = label.substr(eq + 1);
    }
  }
  auto sweep = ParseSweep(*document);
  if (!sweep.ok()) return InvalidArgument(path + ": " + sweep.status().message() + "; " + outcome);
  return sweep;
}

// Uploads the model files `sweep` names by path (cli/model_upload.h) and names them by
// content in its source.
Status ShipModels(CoordinatorClient& client, Sweep* sweep, const std::string& outcome) {
  json source = sweep->source;
  Status uploaded = UploadModels(client, &source, std::cerr);
  if (!uploaded.ok()) return Status(uploaded.code(), uploaded.message() + "; " + outcome);
  if (source == sweep->source) return Status::Ok();
  auto named = ParseSweep(source);
  if (!named.ok()) return Status(named.status().code(), named.status().message() + "; " + outcome);
  *sweep = std::move(*named);
  return Status::Ok();
}

// A number of seconds as people read it: 42s, 3m 05s, 2h 10m.
std::string Duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lldm %02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof text, "%lldh %02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return text;
}

// A sweep's labels as k=v pairs.
std::string LabelsText(const std::map<std::string, std::string>& labels) {
  std::string text;
  for (const auto& [key, value] : labels) text += (text.empty() ? "" : " ") + key + "=" + value;
  return text;
}

}  // namespace

int SubmitCommand(const ClientOptions& client_options, const SubmitOptions& options) {
  auto sweep = ReadSweepFile(options.file, "nothing was enqueued", options.labels);
  if (!sweep.ok()) return Fail(sweep.status());
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  if (Status shipped = ShipModels(**client, &*sweep, "nothing was enqueued"); !shipped.ok()) return Fail(shipped);
  const std::string submission_id =
      options.submission_id.empty() ? NewSubmissionId() : options.submission_id;
  StatusOr<Message> reply = Unavailable("not sent");
  for (int attempt = 1; attempt <= kSubmitTries; ++attempt) {
    reply = (*client)->Call(msg::kSubmit, SubmitRequest{sweep->source, submission_id}.ToJson());
    if (reply.ok() || reply.status().code() != StatusCode::kUnavailable) break;
    if (attempt < kSubmitTries) std::cerr << "benchfleet: " << reply.status().message() << "; sending again\n";
  }
  if (!reply.ok()) {
    if (reply.status().code() == StatusCode::kUnavailable) {
      std::cerr << "benchfleet: " << reply.status().message() << "\n"
                << "benchfleet: the sweep may have been stored all the same. Check with "
                   "`benchfleet status`, or send it again with `benchfleet submit "
                << options.file << " --submission-id " << submission_id
                << "` (the same id never makes a second sweep)\n";
      return 1;
    }
    return Fail(reply.status());
  }
  auto submitted = SubmittedReply::FromJson(reply->body);
  if (!submitted.ok()) return Fail(submitted.status());
  const int64_t sweep_id = submitted->sweep_id;
  std::string agents;
  for (const std::string& a : submitted->agents) agents += (agents.empty() ? "" : ", ") + a;
  std::cout << "sweep " << sweep_id << " \"" << sweep->name << "\": " << submitted->jobs
            << " jobs" << (agents.empty() ? " for any matching agent" : " on " + agents)
            << (submitted->existing ? " (stored by an earlier send of this submission)" : "") << "\n";
  // What the sweep's exclude list and "invalid": "skip" left out.
  if (submitted->excluded > 0) {
    std::cout << "  " << submitted->excluded << " combinations excluded by the sweep's exclude list\n";
  }
  if (submitted->skipped > 0) {
    std::cout << "  " << submitted->skipped << " combinations skipped, refused by the job rules:\n";
    for (const json& one : submitted->skipped_first) {
      const json job = one.value("job", json::object());
      std::cout << "    " << job.value("model", "") << " " << job.value("mode", "") << " "
                << job.value("dtype", "") << " batch " << job.value("batch_size", json(nullptr)).dump()
                << (job.contains("model_args") ? " " + job["model_args"].dump() : "") << ": "
                << one.value("reason", "") << "\n";
    }
    if (submitted->skipped > static_cast<int64_t>(submitted->skipped_first.size())) {
      std::cout << "    ...\n";
    }
  }
  std::cout << std::flush;
  if (!options.wait) return 0;
  return WaitForSweep(**client, sweep_id, options.wait_timeout_s);
}

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
    sweep_rows.push_back({s.sweep_id, s.name, s.state, j.total, j.queued, j.running, j.done, j.failed, j.cancelled,
                          s.eta_s ? json(Duration(*s.eta_s)) : json(nullptr), s.created_at, LabelsText(s.labels)});
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
      auto number = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("null"); };
      what = job.kind == "calibration" ? "calibration"
                                       : text(job.model) + " " + text(job.mode) + " " + text(job.dtype) + " batch " +
                                             number(job.batch_size) + " threads " + number(job.threads) + " on " +
                                             job.device;
      int64_t started_us = 0;
      if (ParseUtcIso8601(job.started_at, &started_us)) {
        running = Duration(static_cast<double>(now_us - started_us) / 1e6);
      }
    }
    agent_rows.push_back({a.agent, a.Busy() ? "busy" : "idle", a.job_id ? json(*a.job_id) : json(nullptr), sweep,
                          what, running, a.last_seen_ms_ago});
  }
  std::cout << "\nagents\n"
            << FormatRows({"agent", "state", "job_id", "sweep_id", "job", "running_for", "last_seen_ms_ago"},
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
    for (const auto& [name, value] : reply->counters.Named()) std::cout << "  " << name << "=" << value;
    std::cout << "\n";
  }
  return 0;
}

int ResultsCommand(Reads& reads, std::optional<int64_t> sweep_id,
                   RowFormat format, const ResultColumnChoice& columns) {
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

int CalibrateCommand(const ClientOptions& client_options, const std::vector<std::string>& agents,
                     bool wait) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = (*client)->Call(msg::kCalibrate, CalibrateRequest{agents}.ToJson(), CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  auto queued = SubmittedReply::FromJson(reply->body);
  if (!queued.ok()) return Fail(queued.status());
  const int64_t sweep_id = queued->sweep_id;
  std::cout << "calibration sweep " << sweep_id << " queued for " << queued->agents.size() << " agent(s)\n"
            << std::flush;
  if (!wait) return 0;
  int code = WaitForSweep(**client, sweep_id, 0);
  if (code != 0) return code;
  auto rows = QueryRows(**client, CalibrationOfSweepSql(sweep_id));
  if (!rows.ok()) return Fail(rows.status());
  PrintRows(*rows, RowFormat::kTable);
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

int ViewCommand(Reads& reads, const std::string& view,
                std::optional<int64_t> sweep_id, RowFormat format) {
  if (view == "summary") return ResultsCommand(reads, sweep_id, format, ResultColumnChoice{});
  const auto& views = ResultViewTable();
  auto it = std::find_if(views.begin(), views.end(), [&](const ResultView& v) { return view == v.name; });
  if (it == views.end()) {
    std::string names;
    for (const ResultView& v : views) names += (names.empty() ? "" : ", ") + std::string(v.name);
    return Fail(InvalidArgument("--view must be one of " + names + ", got \"" + view + "\""));
  }
  return QueryCommand(reads, ResultViewSql(*it, sweep_id), format);
}

int KeygenCommand(const std::string& prefix, bool force) {
  auto pair = GenerateCurveKeyPair();
  if (!pair.ok()) return Fail(pair.status());
  Status written = WriteCurveKeyPair(*pair, prefix, force);
  if (written.code() == StatusCode::kFailedPrecondition) {
    return Fail(FailedPrecondition(written.message() + "; give --force to replace it anyway"));
  }
  if (!written.ok()) return Fail(written);
  std::cout << "wrote " << prefix << ".key (keep it secret) and " << prefix << ".pub\n"
            << "public key: " << pair->public_key << "\n";
  return 0;
}

StatusOr<double> ParseAge(const std::string& text) {
  static const std::map<char, double> kUnitSeconds = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400},
                                                       {'w', 7 * 86400}};
  const std::string error = "\"" + text + "\": an age is a number and a unit, e.g. 90d, 12h, 30m, 45s";
  if (text.empty()) return InvalidArgument(error);
  double unit = 1;
  std::string number = text;
  if (auto found = kUnitSeconds.find(text.back()); found != kUnitSeconds.end()) {
    unit = found->second;
    number.pop_back();
  }
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos ||
      std::count(number.begin(), number.end(), '.') > 1 || number == ".") {
    return InvalidArgument(error);
  }
  return std::stod(number) * unit;
}

int PruneCommand(ClientOptions client_options, const std::string& age, double wait_timeout_s) {
  auto seconds = ParseAge(age);
  if (!seconds.ok()) return Fail(seconds.status());
  // The coordinator answers once the whole store has been worked through.
  client_options.timeout_ms =
      std::max(client_options.timeout_ms, static_cast<int>(std::min(wait_timeout_s, 86400.0) * 1000));
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = (*client)->Call(msg::kPrune, PruneRequest{*seconds}.ToJson(), CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  auto pruned = PrunedReply::FromJson(reply->body);
  if (!pruned.ok()) return Fail(pruned.status());
  std::cout << "dropped the raw samples of " << pruned->results_pruned << " results older than " << age
            << "; the store went from " << FormatBytes(static_cast<double>(pruned->bytes_before)) << " to "
            << FormatBytes(static_cast<double>(pruned->bytes_after)) << "\n";
  return 0;
}

namespace {

// A row's value by column name; null when the reply has no such column.
json Cell(const json& row, const std::string& column) {
  auto it = row.find(column);
  return it == row.end() ? json() : *it;
}

std::string SweepList(const std::vector<int64_t>& sweeps) {
  std::string list;
  for (int64_t id : sweeps) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return list;
}

// Two sweeps, configuration by configuration, on their raw samples.
int CompareTwoSweeps(Reads& reads, const CompareOptions& options, RowFormat format) {
  const int64_t a = options.sweeps[0], b = options.sweeps[1];
  auto results = reads.Query(ResultsOfSweepsSql(options.sweeps));
  if (!results.ok()) return Fail(results.status());
  // The first result of each configuration in each sweep (a rerun confirming a
  // regression candidate is a later one).
  std::map<std::string, std::pair<json, json>> cells;  // key -> (row in A, row in B)
  std::vector<std::string> order;
  // The host's pace of each sweep on each host: its results' (docs/regressions.md, Host pace).
  std::map<std::pair<int64_t, std::string>, std::vector<double>> paces;
  for (json& row : results->Objects()) {
    if (const json pace = Cell(row, "host_pace_ms"); pace.is_number() && pace.get<double>() > 0) {
      paces[{Cell(row, "sweep_id").get<int64_t>(), FormatCell(Cell(row, "host"))}].push_back(pace.get<double>());
    }
    json config = json::array();
    for (const std::string& name : ConfigColumnNames()) config.push_back(Cell(row, name));
    const std::string key = config.dump();
    if (!cells.count(key)) order.push_back(key);
    auto& cell = cells[key];
    json& side = Cell(row, "sweep_id") == a ? cell.first : cell.second;
    if (side.is_null()) side = std::move(row);
  }
  std::vector<int64_t> jobs;
  for (const auto& [key, cell] : cells) {
    if (cell.first.is_null() || cell.second.is_null()) continue;
    jobs.push_back(Cell(cell.first, "job_id").get<int64_t>());
    jobs.push_back(Cell(cell.second, "job_id").get<int64_t>());
  }
  if (jobs.empty()) {
    return Fail(NotFound("sweeps " + std::to_string(a) + " and " + std::to_string(b) +
                         " have no configuration in common with results"));
  }
  // One row per job: its samples as a list (the reply's row limit counts jobs).
  auto samples = reads.Query(CompareSamplesSql(jobs));
  if (!samples.ok()) return Fail(samples.status());
  auto lists = [](const RowsReply& reply, const char* column) {
    std::map<int64_t, std::vector<double>> by_job;
    for (const json& row : reply.Objects()) {
      const json list_text = Cell(row, column);
      std::stringstream list(list_text.is_string() ? list_text.get<std::string>() : "");
      std::string value;
      while (std::getline(list, value, ',')) by_job[Cell(row, "job_id").get<int64_t>()].push_back(std::stod(value));
    }
    return by_job;
  };
  std::map<int64_t, std::vector<double>> by_job = lists(*samples, "samples");
  // A store from before repeats in processes has no result_processes: compared on samples.
  auto process_rows = reads.Query(CompareProcessMediansSql(jobs));
  const std::map<int64_t, std::vector<double>> processes_of =
      process_rows.ok() ? lists(*process_rows, "medians") : std::map<int64_t, std::vector<double>>();
  // Each side's median with its 95% confidence interval as the worker measured it.
  std::vector<std::string> columns = ConfigColumnNames();
  for (const char* name : {"a_median_ms", "a_ci_low_ms", "a_ci_high_ms", "b_median_ms", "b_ci_low_ms",
                           "b_ci_high_ms", "ratio", "p", "change", "a_samples", "b_samples", "host_pace_ratio"}) {
    columns.push_back(name);
  }
  json rows = json::array();
  for (const std::string& key : order) {
    const auto& [in_a, in_b] = cells[key];
    if (in_a.is_null() || in_b.is_null()) continue;
    json row = json::parse(key);
    const std::vector<double>& sa = by_job[Cell(in_a, "job_id").get<int64_t>()];
    const std::vector<double>& sb = by_job[Cell(in_b, "job_id").get<int64_t>()];
    const json low_a = Cell(in_a, "median_ci_low_ms"), high_a = Cell(in_a, "median_ci_high_ms");
    const json low_b = Cell(in_b, "median_ci_low_ms"), high_b = Cell(in_b, "median_ci_high_ms");
    const auto pa = processes_of.find(Cell(in_a, "job_id").get<int64_t>());
    const auto pb = processes_of.find(Cell(in_b, "job_id").get<int64_t>());
    // B's host pace over A's, each the mean over its sweep's results on the host; 0: a side
    // has fewer than kHostPaceMinResults (one reference run spreads too much to say).
    auto sweep_pace = [&](int64_t sweep) {
      const auto it = paces.find({sweep, FormatCell(Cell(in_a, "host"))});
      if (it == paces.end() || static_cast<long>(it->second.size()) < kHostPaceMinResults) return 0.0;
      double sum = 0;
      for (double pace : it->second) sum += pace;
      return sum / static_cast<double>(it->second.size());
    };
    const double pace_a = sweep_pace(a), pace_b = sweep_pace(b);
    const double pace_ratio = pace_a > 0 && pace_b > 0 ? pace_b / pace_a : 0;
    const json pace_cell = pace_ratio > 0 ? json(pace_ratio) : json(nullptr);
    const bool by_processes =
        pa != processes_of.end() && pb != processes_of.end() && pa->second.size() >= 2 && pb->second.size() >= 2;
    if (!by_processes && (sa.empty() || sb.empty())) {
      // Samples pruned: the medians alone cannot say whether the change is real.
      const json median_a = Cell(in_a, "median_ms"), median_b = Cell(in_b, "median_ms");
      const double ma = median_a.is_number() ? median_a.get<double>() : 0;
      const double mb = median_b.is_number() ? median_b.get<double>() : 0;
      for (const json& v : {median_a, low_a, high_a, median_b, low_b, high_b, json(ma > 0 ? mb / ma : 0.0),
                            json(nullptr), json("no samples"), json(sa.size()), json(sb.size()), pace_cell}) {
        row.push_back(v);
      }
      rows.push_back(std::move(row));
      continue;
    }
    auto judge = [&]() {
      // Both ran in several processes: tested on their medians, the run-to-run spread.
      if (by_processes) return CompareProcesses(pa->second, pb->second, options.ratio);
      SampleComparison c = CompareSamples(sa, sb, options.ratio);
      // Samples taken one after another lean on each other, which the rank test takes
      // for more evidence than it is: a change must also part the two medians' intervals
      // (each already widened for that dependence).
      const bool intervals = low_a.is_number() && high_a.is_number() && low_b.is_number() && high_b.is_number();
      if (intervals && low_b.get<double>() <= high_a.get<double>() && low_a.get<double>() <= high_b.get<double>()) {
        c.change = Change::kUnchanged;
      }
      return c;
    };
    const SampleComparison c = judge();
    std::string change = ChangeName(c.change);
    // The host's pace moved beyond the ratio a change must exceed, the same way, and far
    // enough to explain it (common/host_pace.h): the host's.
    if (c.change != Change::kUnchanged && HostPaceExplains(c.ratio, pace_ratio, options.ratio)) {
      change = std::string("host ") + ChangeName(c.change);
    }
    for (const json& v : {json(c.median_a), low_a, high_a, json(c.median_b), low_b, high_b, json(c.ratio),
                          json(c.test.p), json(change), json(sa.size()), json(sb.size()), pace_cell}) {
      row.push_back(v);
    }
    rows.push_back(std::move(row));
  }
  const RowsReply compared = LocalRows(columns, rows);
  const ChangeCounts counts = CountChanges(compared);
  if (format == RowFormat::kJunit) {
    std::cout << CompareJunit(compared, a, b);
  } else {
    // A pull-request comment opens with the verdict.
    if (format == RowFormat::kMarkdown) std::cout << "**" << ChangeSummary(counts) << "**\n\n";
    PrintRows(compared, format);
  }
  return options.fail_on_slower && counts.slower > 0 ? 1 : 0;
}

// One or two sweeps' medians pivoted: `rows` by `cols`, with each cell's precision (its
// median's 95% interval, half-width / median; the widest where a cell has several
// results) and the ratio to the baseline column.
int PivotSweeps(Reads& reads, const CompareOptions& options, RowFormat format) {
  static const std::vector<std::string> kRowKeys = {"model", "batch_size", "mode", "dtype",
                                                    "threads", "device", "host", "model_args"};
  static const std::vector<std::string> kColKeys = {"host", "device", "dtype", "threads", "sweep"};
  for (const std::string& r : options.rows) {
    if (std::find(kRowKeys.begin(), kRowKeys.end(), r) == kRowKeys.end()) {
      return Fail(InvalidArgument("--rows: \"" + r + "\" is not one of model, batch_size, mode, dtype, threads, "
                                  "device, host, model_args"));
    }
  }
  if (std::find(kColKeys.begin(), kColKeys.end(), options.cols) == kColKeys.end()) {
    return Fail(InvalidArgument("--cols must be host, device, dtype, threads or sweep, got \"" + options.cols + "\""));
  }
  auto results = reads.Query(PivotMediansSql(options.rows, options.cols, options.sweeps));
  if (!results.ok()) return Fail(results.status());
  std::map<std::string, std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>> cells;
  std::vector<std::string> row_order;
  std::vector<std::string> col_values;
  for (const json& row : results->Objects()) {
    json key = json::array();
    for (const std::string& name : options.rows) key.push_back(Cell(row, name));
    const std::string col_value = FormatCell(Cell(row, "pivot_column"));
    if (!cells.count(key.dump())) row_order.push_back(key.dump());
    if (std::find(col_values.begin(), col_values.end(), col_value) == col_values.end()) col_values.push_back(col_value);
    auto& cell = cells[key.dump()][col_value];
    if (const json median = Cell(row, "median_ms"); median.is_number()) {
      cell.first.push_back(median.get<double>());
      if (const json relative = Cell(row, "median_ci_relative"); relative.is_number()) {
        cell.second.push_back(relative.get<double>());
      }
    }
  }
  if (row_order.empty()) return Fail(NotFound("no results in sweep(s) " + SweepList(options.sweeps)));
  std::sort(row_order.begin(), row_order.end());
  std::sort(col_values.begin(), col_values.end());
  const std::string baseline = options.baseline.empty() ? col_values.front() : options.baseline;
  if (std::find(col_values.begin(), col_values.end(), baseline) == col_values.end()) {
    return Fail(InvalidArgument("--baseline \"" + baseline + "\" is no value of " + options.cols));
  }
  std::vector<std::string> columns = options.rows;
  for (const std::string& v : col_values) {
    columns.push_back(options.cols + " " + v + " ms");
    columns.push_back(options.cols + " " + v + " ci +-");
    if (v != baseline) columns.push_back(options.cols + " " + v + " / " + baseline);
  }
  json rows = json::array();
  for (const std::string& key : row_order) {
    json row = json::parse(key);
    const auto& by_col = cells[key];
    auto median_at = [&](const std::string& v) -> json {
      auto it = by_col.find(v);
      return it == by_col.end() || it->second.first.empty() ? json(nullptr) : json(Median(it->second.first));
    };
    const json base = median_at(baseline);
    for (const std::string& v : col_values) {
      const json median = median_at(v);
      row.push_back(median);
      auto it = by_col.find(v);
      row.push_back(it == by_col.end() || it->second.second.empty()
                        ? json(nullptr)
                        : json(*std::max_element(it->second.second.begin(), it->second.second.end())));
      if (v != baseline) {
        row.push_back(median.is_number() && base.is_number() && base.get<double>() > 0
                          ? json(median.get<double>() / base.get<double>())
                          : json(nullptr));
      }
    }
    rows.push_back(std::move(row));
  }
  PrintRows(LocalRows(columns, rows), format);
  return 0;
}

}  // namespace

int CompareCommand(Reads& reads, const CompareOptions& options, RowFormat format) {
  if (options.sweeps.empty() || options.sweeps.size() > 2) {
    return Fail(InvalidArgument("compare takes one or two sweep ids"));
  }
  const bool pivot = !options.rows.empty() || !options.cols.empty();
  if (pivot && (options.rows.empty() || options.cols.empty())) {
    return Fail(InvalidArgument("a pivot needs both --rows and --cols"));
  }
  if (!pivot && options.sweeps.size() != 2) {
    return Fail(InvalidArgument("compare SWEEP_A SWEEP_B, or one sweep with --rows and --cols"));
  }
  if (!(options.ratio > 1)) return Fail(InvalidArgument("--ratio must be above 1"));
  // A pivot has medians, not verdicts: nothing to fail on, no tests to report.
  if (pivot && options.fail_on_slower) return Fail(InvalidArgument("--fail-on slower needs two sweeps, not a pivot"));
  if (pivot && format == RowFormat::kJunit) {
    return Fail(InvalidArgument("--format junit needs two sweeps, not a pivot"));
  }
  return pivot ? PivotSweeps(reads, options, format) : CompareTwoSweeps(reads, options, format);
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
  const std::vector<std::string> columns = {"job_id",           "device",           "dtype",
                                            "threads",          "batch_size",       "replicas",
                                            "scenario",         "throughput_per_s", "p99_ms",
                                            "median_ms",        "median_ci_low_ms", "median_ci_high_ms",
                                            "accuracy_loss",    "cost_per_1m_samples", "noisy",
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

int RegressionsCommand(Reads& reads, const std::string& since, RowFormat format, bool fail_on_confirmed) {
  std::optional<int64_t> within_s;
  if (!since.empty()) {
    auto seconds = ParseAge(since);
    if (!seconds.ok()) return Fail(seconds.status());
    within_s = static_cast<int64_t>(*seconds);
  }
  auto reply = reads.Query(ConfirmedRegressionsSql(within_s));
  if (!reply.ok()) return Fail(reply.status());
  const int gate = fail_on_confirmed && CountRegressions(*reply) > 0 ? 1 : 0;
  if (format == RowFormat::kJunit) {
    std::cout << RegressionsJunit(*reply, since);
    return gate;
  }
  if (reply->rows.empty() && (format == RowFormat::kTable || format == RowFormat::kMarkdown)) {
    std::cout << "no confirmed regression or improvement" << (since.empty() ? "" : " in the last " + since) << "\n";
    return gate;
  }
  if (format == RowFormat::kMarkdown) {
    const int regressions = CountRegressions(*reply);
    std::cout << "**" << regressions << " regression(s), " << static_cast<int>(reply->rows.size()) - regressions
              << " improvement(s)**\n\n";
  }
  PrintRows(*reply, format);
  return gate;
}

int BaselineResetCommand(const ClientOptions& client_options, const std::string& host, const std::string& model,
                         const std::string& note) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = (*client)->Call(msg::kBaselineReset, BaselineResetRequest{host, model, note}.ToJson(),
                               CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  std::cout << "baseline reset for " << (host.empty() ? "every host" : host) << ", "
            << (model.empty() ? "every model" : model)
            << ": results before now leave the regression baseline\n";
  return 0;
}

int SetPriceCommand(const ClientOptions& client_options, const std::string& host, double per_hour,
                    const std::string& currency) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = (*client)->Call(msg::kSetPrice, SetPriceRequest{host, HostPrice{per_hour, currency}}.ToJson(),
                               CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  std::cout << host << " costs " << per_hour << " " << currency << " an hour from now on\n";
  return 0;
}

int ScheduleCommand(const ClientOptions& client_options, const ScheduleOptions& options, RowFormat format) {
  using Action = ScheduleRequest::Action;
  ScheduleRequest request;
  request.action = options.action == "add"       ? Action::kAdd
                   : options.action == "remove"  ? Action::kRemove
                   : options.action == "run-now" ? Action::kRunNow
                   : options.action == "history" ? Action::kHistory
                                                 : Action::kList;
  request.name = options.name;
  if (request.action == Action::kAdd) {
    auto sweep = ReadSweepFile(options.file, "no schedule was added", options.labels);
    if (!sweep.ok()) return Fail(sweep.status());
    auto client = Connect(client_options);
    if (!client.ok()) return Fail(client.status());
    if (Status shipped = ShipModels(**client, &*sweep, "no schedule was added"); !shipped.ok()) return Fail(shipped);
    request.sweep = sweep->source;
    request.cron = options.cron;
    request.tz = options.tz;
    request.overlap_queue = options.overlap == "queue";  // CLI11 let only skip or queue through
    request.start_deadline_s = options.start_deadline_s;
  }
  if (request.action == Action::kHistory) request.limit = options.limit;
  // run-now sends its own id, so a resend after a lost reply fires once.
  if (request.action == Action::kRunNow) request.submission_id = NewSubmissionId();
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  // add and remove must not go twice (the second would be refused: "exists", "no
  // schedule"); run-now carries its own submission id.
  const bool once = options.action == "add" || options.action == "remove";
  auto reply = (*client)->Call(msg::kSchedule, request.ToJson(),
                               once ? CoordinatorClient::Retry::kNever : CoordinatorClient::Retry::kOnce);
  if (!reply.ok()) return Fail(reply.status());
  if (reply->type == msg::kRows) {
    auto rows = ReadRows(reply);
    if (!rows.ok()) return Fail(rows.status());
    PrintRows(*rows, format);
    return 0;
  }
  if (reply->type == msg::kSubmitted) {
    auto submitted = SubmittedReply::FromJson(reply->body);
    if (!submitted.ok()) return Fail(submitted.status());
    std::cout << "schedule " << options.name << ": sweep " << submitted->sweep_id << " with " << submitted->jobs
              << " jobs\n";
    return 0;
  }
  // `schedules`: one row per schedule, as a query's rows print.
  const std::vector<std::string> columns = {"name", "cron", "tz", "next_slot", "overlap", "start_deadline_s",
                                            "sweep_name", "handled_until", "created_at"};
  auto schedules = SchedulesReply::FromJson(reply->body);
  if (!schedules.ok()) return Fail(schedules.status());
  json rows = json::array();
  for (const ScheduleEntry& s : schedules->schedules) {
    const json entry = s.ToJson();
    json row = json::array();
    for (const std::string& c : columns) row.push_back(entry.at(c));
    rows.push_back(std::move(row));
  }
  if (options.action == "remove") std::cout << "schedule " << options.name << " removed\n";
  PrintRows(LocalRows(columns, rows), format);
  return 0;
}

int CancelCommand(const ClientOptions& client_options, int64_t sweep_id) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = (*client)->Call(msg::kCancel, SweepRequest{sweep_id}.ToJson());
  if (!reply.ok()) return Fail(reply.status());
  auto cancelled = CancelledReply::FromJson(reply->body);
  if (!cancelled.ok()) return Fail(cancelled.status());
  std::cout << "sweep " << sweep_id << " cancelled; " << cancelled->jobs_cancelled << " queued jobs dropped\n";
  return 0;
}

}  // namespace benchfleet
