// The commands that start or stop work: submit, calibrate, schedule, cancel.
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

int SubmitCommand(const ClientOptions& client_options, const SubmitOptions& options) {
  auto sweep = ReadSweepFile(options.file, "nothing was enqueued", options.labels);
  if (!sweep.ok()) return Fail(sweep.status());
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  if (Status shipped = ShipModels(**client, &*sweep, "nothing was enqueued"); !shipped.ok())
    return Fail(shipped);
  const std::string submission_id =
      options.submission_id.empty() ? NewSubmissionId() : options.submission_id;
  StatusOr<Message> reply = Unavailable("not sent");
  for (int attempt = 1; attempt <= kSubmitTries; ++attempt) {
    reply = (*client)->Call(msg::kSubmit, SubmitRequest{sweep->source, submission_id}.ToJson());
    if (reply.ok() || reply.status().code() != StatusCode::kUnavailable) break;
    if (attempt < kSubmitTries)
      std::cerr << "benchfleet: " << reply.status().message() << "; sending again\n";
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
  std::cout << "sweep " << sweep_id << " \"" << sweep->name << "\": " << submitted->jobs << " jobs"
            << (agents.empty() ? " for any matching agent" : " on " + agents)
            << (submitted->existing ? " (stored by an earlier send of this submission)" : "")
            << "\n";
  // What the sweep's exclude list and "invalid": "skip" left out.
  if (submitted->excluded > 0) {
    std::cout << "  " << submitted->excluded
              << " combinations excluded by the sweep's exclude list\n";
  }
  if (submitted->skipped > 0) {
    std::cout << "  " << submitted->skipped << " combinations skipped, refused by the job rules:\n";
    for (const json& one : submitted->skipped_first) {
      const json job = one.value("job", json::object());
      std::cout << "    " << job.value("model", "") << " " << job.value("mode", "") << " "
                << job.value("dtype", "") << " batch "
                << job.value("batch_size", json(nullptr)).dump()
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

int CalibrateCommand(const ClientOptions& client_options, const std::vector<std::string>& agents,
                     bool wait) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = (*client)->Call(msg::kCalibrate, CalibrateRequest{agents}.ToJson(),
                               CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  auto queued = SubmittedReply::FromJson(reply->body);
  if (!queued.ok()) return Fail(queued.status());
  const int64_t sweep_id = queued->sweep_id;
  std::cout << "calibration sweep " << sweep_id << " queued for " << queued->agents.size()
            << " agent(s)\n"
            << std::flush;
  if (!wait) return 0;
  int code = WaitForSweep(**client, sweep_id, 0);
  if (code != 0) return code;
  auto rows = QueryRows(**client, CalibrationOfSweepSql(sweep_id));
  if (!rows.ok()) return Fail(rows.status());
  PrintRows(*rows, RowFormat::kTable);
  return 0;
}

int ScheduleCommand(const ClientOptions& client_options, const ScheduleOptions& options,
                    RowFormat format) {
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
    if (Status shipped = ShipModels(**client, &*sweep, "no schedule was added"); !shipped.ok())
      return Fail(shipped);
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
  auto reply =
      (*client)->Call(msg::kSchedule, request.ToJson(),
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
    std::cout << "schedule " << options.name << ": sweep " << submitted->sweep_id << " with "
              << submitted->jobs << " jobs\n";
    return 0;
  }
  // `schedules`: one row per schedule, as a query's rows print.
  const std::vector<std::string> columns = {"name",       "cron",          "tz",
                                            "next_slot",  "overlap",       "start_deadline_s",
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
  std::cout << "sweep " << sweep_id << " cancelled; " << cancelled->jobs_cancelled
            << " queued jobs dropped\n";
  return 0;
}

}  // namespace benchfleet
