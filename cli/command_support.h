// What the CLI's commands (cli/commands.h) share: the connection, the reads every
// command makes of the coordinator, printing rows, a sweep file read and its models
// shipped, waiting on a sweep. Each command family has a file of its own:
// submit_commands.cc, read_commands.cc, compare_command.cc, admin_commands.cc.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "common/client_replies.h"
#include "common/status.h"
#include "common/status_reply.h"
#include "common/sweep.h"

namespace benchfleet {

// Submits tried with one submission id before the CLI gives up (safe: a resend never
// makes a second sweep).
constexpr int kSubmitTries = 3;

// A random id for one submission: 64 bits from the OS.
std::string NewSubmissionId();
// Prints the error; the exit code: 2 for bad input, 1 otherwise.
int Fail(const Status& status);
// Prints the error of a compare or regressions that could not compare: kExitCannotCompare,
// whatever it was (1 is theirs for a --fail-on met).
int CannotCompare(const Status& status);
StatusOr<std::unique_ptr<CoordinatorClient>> Connect(const ClientOptions& client);
// A reply that must be `rows`, read into its struct.
StatusOr<RowsReply> ReadRows(const StatusOr<Message>& reply);
// The rows a read-only statement returns (a `query` request).
StatusOr<RowsReply> QueryRows(CoordinatorClient& client, const std::string& sql);
// The coordinator's status, of one sweep or of the latest ones.
StatusOr<StatusReply> ReadStatus(CoordinatorClient& client, std::optional<int64_t> sweep_id);
// Rows the CLI computed itself, printed as a reply's are.
RowsReply LocalRows(std::vector<std::string> columns, const json& rows);
// Prints `reply` in `format`; a table keeps only the columns `only` names, if any.
void PrintRows(const RowsReply& reply, RowFormat format, const std::vector<std::string>& only = {});
// A progress bar and counts for a sweep `elapsed_s` into its wait.
std::string ProgressLine(const SweepOverview& sweep, double elapsed_s);
// Waits for the sweep to end, showing its progress; the exit code (kExitNoAgentCanRun
// where no registered agent can run its queued jobs).
int WaitForSweep(CoordinatorClient& client, int64_t sweep_id, double timeout_s);
// The sweep file at `path`, checked here first so a user gets the error without a round
// trip (the coordinator checks again: it trusts no client), with --label KEY=VALUE pairs
// put into its labels (over the file's own); `outcome` ends the message of a bad one
// ("nothing was enqueued").
StatusOr<Sweep> ReadSweepFile(const std::string& path, const std::string& outcome,
                              const std::vector<std::string>& labels = {});
// Uploads the model files `sweep` names by path (cli/model_upload.h) and names them by
// content in its source.
Status ShipModels(CoordinatorClient& client, Sweep* sweep, const std::string& outcome);
// A number of seconds as people read it: 42s, 3m 05s, 2h 10m.
std::string Duration(double seconds);
// A sweep's labels as k=v pairs.
std::string LabelsText(const std::map<std::string, std::string>& labels);

}  // namespace benchfleet
