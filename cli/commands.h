// The benchfleet commands. Each returns the process exit code: 0 success, 1 failure
// (the coordinator unreachable, a job failed), 2 bad input (nothing was sent or enqueued).
#pragma once

#include <optional>
#include <string>

#include "cli/format.h"

namespace benchfleet {

struct ClientOptions {
  std::string coordinator;  // the coordinator's client endpoint
  int timeout_ms;
};

struct SubmitOptions {
  std::string file;
  bool wait = false;
  double wait_timeout_s = 0;  // 0: wait as long as it takes
};

int SubmitCommand(const ClientOptions& client, const SubmitOptions& options);
int StatusCommand(const ClientOptions& client, std::optional<int64_t> sweep_id, RowFormat format);
int ResultsCommand(const ClientOptions& client, std::optional<int64_t> sweep_id, RowFormat format,
                   bool all_columns);
int QueryCommand(const ClientOptions& client, const std::string& sql, RowFormat format);
int CancelCommand(const ClientOptions& client, int64_t sweep_id);

}  // namespace benchfleet
