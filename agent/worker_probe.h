// ProbeWorker: what the worker's LibTorch build can do (`benchfleet-worker --probe`), and
// the agent's proof that its worker runs at all. An agent whose worker cannot be
// executed, or whose probe fails, refuses to start: registered anyway it would fail
// every job it is given.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace benchfleet {

// Runs `worker_path --probe` and returns the JSON object it prints on stdout. Errors
// (kFailedPrecondition) say why and what to do: the file is missing or not executable,
// exec failed, the probe exited non-zero or was killed (with the tail of its stderr),
// printed no JSON object, or did not finish within `timeout` (it is then killed).
StatusOr<nlohmann::json> ProbeWorker(const std::string& worker_path,
                                     std::chrono::milliseconds timeout);

}  // namespace benchfleet
