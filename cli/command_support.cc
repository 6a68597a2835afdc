#include "cli/command_support.h"

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

namespace {

// How often `submit --wait` asks for progress.
constexpr int kProgressPollMs = 250;
constexpr int kProgressBarWidth = 30;

}  // namespace

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

int CannotCompare(const Status& status) {
  std::cerr << "benchfleet: " << status.message() << "\n";
  return kExitCannotCompare;
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
  if (reply->type != msg::kStatusReply)
    return Internal("expected a status reply, got " + reply->type);
  return StatusReply::FromJson(reply->body);
}

// Rows the CLI computed itself, printed as a reply's are.
RowsReply LocalRows(std::vector<std::string> columns, const json& rows) {
  return RowsReply{nullptr, std::move(columns), std::vector<json>(rows.begin(), rows.end()), false};
}

void PrintRows(const RowsReply& reply, RowFormat format, const std::vector<std::string>& only) {
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
    if (reply.ok() && reply->sweeps.empty())
      reply = Internal("the status names no sweep " + std::to_string(sweep_id));
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
                       std::all_of(waiting.begin(), waiting.end(), [](const WaitingRequirement& w) {
                         return w.matching_agents == 0;
                       });
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

// The sweep file at `path`, checked here first so a user gets the error without a round
// trip (the coordinator checks again: it trusts no client); `outcome` ends the message
// of a bad one ("nothing was enqueued").
// The sweep file, with --label KEY=VALUE pairs put into its labels (over the file's own).
StatusOr<Sweep> ReadSweepFile(const std::string& path, const std::string& outcome,
                              const std::vector<std::string>& labels) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return InvalidArgument("cannot read sweep file: " + text.status().message());
  auto document = ParseSweepJson(*text);
  if (!document.ok())
    return InvalidArgument(path + ": " + document.status().message() + "; " + outcome);
  // A model file named by a relative path is beside the sweep file.
  ResolveModelPaths(&*document, std::filesystem::absolute(path).parent_path().string());
  if (!labels.empty() && document->is_object()) {
    if (!document->contains("labels")) (*document)["labels"] = json::object();
    for (const std::string& label : labels) {
      const size_t eq = label.find('=');
      if (eq == std::string::npos || eq == 0) {
        return InvalidArgument("--label " + label +
                               ": must be KEY=VALUE, e.g. --label commit=abc123; " + outcome);
      }
      if ((*document)["labels"].is_object())
        (*document)["labels"][label.substr(0, eq)] = label.substr(eq + 1);
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
    std::snprintf(text, sizeof text, "%lldm %02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
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

}  // namespace benchfleet
