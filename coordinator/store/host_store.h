// The store's hosts (coordinator/store/store.h): each agent's row and fingerprint, its price
// history, and its machine's calibrations as the results of its jobs are held against
// them (peak GFLOP/s) and as registration decides whether to calibrate again.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/agent_messages.h"
#include "common/status.h"
#include "coordinator/core/fingerprint.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

using nlohmann::json;

class HostStore {
 public:
  explicit HostStore(Database& db) : db_(&db) {}

  // Inserts or refreshes the host named `name`; returns its host_id.
  // `fingerprint` (coordinator/core/fingerprint.h) is stored beside it; empty: NULL.
  StatusOr<int64_t> UpsertHost(const std::string& name, const std::string& machine_id,
                               const json& tags, const json& capabilities,
                               const HostFingerprint& fingerprint = {});
  // The host's fingerprint (hosts.fingerprint; empty: none), read once, not once per
  // result.
  StatusOr<std::string> FingerprintOf(int64_t host_id);
  // The fingerprint of the host's worker of torch `torch_version` (a result's
  // runtime.torch_version): that worker's facts in place of the first worker's
  // (coordinator/core/fingerprint.h). The host's own for its first worker, for an empty
  // version, or for one none of its workers has.
  StatusOr<std::string> FingerprintOf(int64_t host_id, const std::string& torch_version);
  // Forgets what FingerprintOf remembered: a group that is not kept may have
  // registered the host.
  void ForgetFingerprints() {
    fingerprints_.clear();
    worker_fingerprints_.clear();
  }

  // Host prices (host_prices, docs/results.md Cost). An agent's price is recorded when
  // it differs from the last one that agent sent, so a re-registration does not undo a
  // price set since with SetHostPrice.
  Status RecordAgentPrice(int64_t host_id, const HostPrice& price);
  // From now on; NotFound for a host that never registered. Returns {host, per_hour,
  // currency, set_at}.
  StatusOr<json> SetHostPrice(const std::string& host, const HostPrice& price);

  // The calibrated peak GFLOP/s a result of `dtype` on `device` with `threads` is
  // compared with: the latest calibration of the host's machine (agents of one machine
  // share it), for the dtype's own GEMM. Null without one (int8 has none).
  StatusOr<json> PeakFor(int64_t host_id, const std::string& device, const std::string& dtype,
                         int64_t threads);
  // Seconds since the latest calibration of any host on `machine_id`, or nullopt when
  // the machine was never calibrated.
  StatusOr<std::optional<double>> CalibrationAge(const std::string& machine_id);
  // True when a calibration of an agent on `machine_id` is queued or running.
  StatusOr<bool> CalibrationPending(const std::string& machine_id);

 private:
  Database* db_;
  std::unordered_map<int64_t, std::string> fingerprints_;                       // by host_id
  std::map<std::pair<int64_t, std::string>, std::string> worker_fingerprints_;  // (host_id, torch)
};

}  // namespace benchfleet
