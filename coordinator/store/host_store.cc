#include "coordinator/store/host_store.h"

#include <algorithm>

#include "common/clock.h"
#include "common/job_spec.h"
#include "common/worker_result.h"
#include "coordinator/core/matching.h"

namespace benchfleet {

StatusOr<int64_t> HostStore::UpsertHost(const std::string& name, const std::string& machine_id,
                                        const json& tags, const json& capabilities,
                                        const HostFingerprint& fingerprint) {
  std::string now = UtcNowIso8601();
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "INSERT INTO hosts(name, machine_id, tags, capabilities, first_seen, last_seen, "
          "fingerprint, fingerprint_parts) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7) "
          "ON CONFLICT(name) DO UPDATE SET machine_id = excluded.machine_id, tags = excluded.tags, "
          "capabilities = excluded.capabilities, last_seen = excluded.last_seen, "
          "fingerprint = excluded.fingerprint, fingerprint_parts = excluded.fingerprint_parts "
          "RETURNING host_id"));
  stmt.Bind(1, name)
      .Bind(2, machine_id)
      .Bind(3, tags.dump())
      .Bind(4, capabilities.dump())
      .Bind(5, now);
  if (fingerprint.sha256.empty()) {
    stmt.BindNull(6).BindNull(7);
  } else {
    stmt.Bind(6, fingerprint.sha256).Bind(7, fingerprint.parts.dump());
  }
  // Every write goes through a Transaction, so it joins the loop's group commit.
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal("host upsert returned no row");
  int64_t host_id = stmt.Int(0);
  RETURN_IF_ERROR(stmt.Run());
  RETURN_IF_ERROR(tx.Commit());
  fingerprints_[host_id] = fingerprint.sha256;
  // Its workers may have changed with this registration.
  for (auto it = worker_fingerprints_.begin(); it != worker_fingerprints_.end();) {
    it = it->first.first == host_id ? worker_fingerprints_.erase(it) : std::next(it);
  }
  return host_id;
}

StatusOr<std::string> HostStore::FingerprintOf(int64_t host_id, const std::string& torch_version) {
  if (torch_version.empty()) return FingerprintOf(host_id);
  const auto key = std::make_pair(host_id, torch_version);
  if (auto it = worker_fingerprints_.find(key); it != worker_fingerprints_.end()) return it->second;
  ASSIGN_OR_RETURN(auto host, db_->Prepare("SELECT capabilities FROM hosts WHERE host_id = ?1"));
  host.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool found, host.Step());
  if (!found) return std::string();
  auto capabilities = Capabilities::FromJson(json::parse(host.Text(0), nullptr, false));
  std::string fingerprint;
  if (capabilities.ok()) {
    const std::vector<TorchFacts> workers = capabilities->Workers();
    const auto worker = std::find_if(workers.begin(), workers.end(), [&](const TorchFacts& w) {
      return w.torch_version.value_or("") == torch_version;
    });
    // The first worker's is the host's own (stored with it).
    if (worker != workers.end() && worker != workers.begin()) {
      fingerprint = benchfleet::FingerprintOf(*capabilities, *worker).sha256;
    }
  }
  if (fingerprint.empty()) {
    ASSIGN_OR_RETURN(fingerprint, FingerprintOf(host_id));
  }
  worker_fingerprints_[key] = fingerprint;
  return fingerprint;
}

StatusOr<std::string> HostStore::FingerprintOf(int64_t host_id) {
  if (auto it = fingerprints_.find(host_id); it != fingerprints_.end()) return it->second;
  ASSIGN_OR_RETURN(auto host, db_->Prepare("SELECT fingerprint FROM hosts WHERE host_id = ?1"));
  host.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool found, host.Step());
  if (!found) return std::string();  // not remembered: the host may be written later
  std::string fingerprint = host.IsNull(0) ? std::string() : host.Text(0);
  fingerprints_[host_id] = fingerprint;
  return fingerprint;
}

StatusOr<json> HostStore::PeakFor(int64_t host_id, const std::string& device,
                                  const std::string& dtype, int64_t threads) {
  const int64_t gpus_needed = GpusNeeded(device);
  const char* gpu_peak = nullptr;
  if (gpus_needed > 0) {
    gpu_peak = GpuPeakField(dtype);
    if (gpu_peak == nullptr) return json(nullptr);  // no int8 GEMM peak
  } else if (dtype != "fp32" && dtype != "bf16") {
    return json(nullptr);  // no int8 GEMM peak; tf32 is CUDA's alone
  }
  const bool bf16 = dtype == "bf16";
  ASSIGN_OR_RETURN(
      auto latest,
      db_->Prepare(std::string("SELECT ") +
                   (bf16 ? "c.gemm_bf16_gflops_all, c.gemm_threads_all, c.gemm_bf16_gflops_1, "
                         : "c.gemm_gflops_all, c.gemm_threads_all, c.gemm_gflops_1, ") +
                   "c.gpus FROM calibrations c JOIN hosts h ON h.host_id = c.host_id "
                   "WHERE h.machine_id = (SELECT machine_id FROM hosts WHERE host_id = ?1) "
                   "ORDER BY c.calibration_id DESC LIMIT 1"));
  latest.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool row, latest.Step());
  if (!row) return json(nullptr);
  if (gpu_peak != nullptr) {
    // Stored from a checked calibration: an array of objects whose GEMM peaks are
    // numbers >= 0 or absent (a calibration older than the figure lacks it).
    json gpus = json::parse(latest.Text(3), nullptr, false);
    const size_t index = static_cast<size_t>(gpus_needed - 1);
    if (!gpus.is_array() || index >= gpus.size() || !gpus[index].is_object()) return json(nullptr);
    json peak = gpus[index].value(gpu_peak, json(nullptr));
    return peak.is_number() ? peak : json(nullptr);
  }
  if (latest.IsNull(0)) return json(nullptr);
  // The peak for T threads: T single-CPU peaks, but never more than all CPUs together.
  double all = latest.Real(0);
  int64_t all_threads = latest.Int(1);
  if (latest.IsNull(2) || threads >= all_threads) return json(all);
  return json(std::min(all, latest.Real(2) * static_cast<double>(threads)));
}

StatusOr<std::optional<double>> HostStore::CalibrationAge(const std::string& machine_id) {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("SELECT (julianday('now') - julianday(c.measured_at)) * 86400 "
                                "FROM calibrations c JOIN hosts h ON h.host_id = c.host_id "
                                "WHERE h.machine_id = ?1 ORDER BY c.calibration_id DESC LIMIT 1"));
  stmt.Bind(1, machine_id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row || stmt.IsNull(0)) return std::optional<double>();
  return std::optional<double>(stmt.Real(0));
}

StatusOr<bool> HostStore::CalibrationPending(const std::string& machine_id) {
  // INDEXED BY: without ANALYZE statistics SQLite takes jobs_by_state as good and walks
  // every queued job (a 1,000,000-job queue stalled the loop for minutes); the index of
  // calibration jobs alone is named, so a plan without it cannot even be prepared.
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("SELECT 1 FROM jobs j INDEXED BY calibration_jobs_by_state "
                                "JOIN hosts h ON h.name = j.pinned_host "
                                "WHERE j.kind = 'calibration' AND j.state IN ('queued', 'running') "
                                "AND h.machine_id = ?1 LIMIT 1"));
  stmt.Bind(1, machine_id);
  return stmt.Step();
}

Status HostStore::RecordAgentPrice(int64_t host_id, const HostPrice& price) {
  ASSIGN_OR_RETURN(auto last, db_->Prepare("SELECT per_hour, currency FROM host_prices "
                                           "WHERE host_id = ?1 AND source = 'agent' "
                                           "ORDER BY price_id DESC LIMIT 1"));
  last.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool found, last.Step());
  if (found && last.Real(0) == price.per_hour && last.Text(1) == price.currency)
    return Status::Ok();
  Transaction tx(*db_);  // joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(InsertRow(*db_, "host_prices",
                            {{"host_id", host_id},
                             {"per_hour", price.per_hour},
                             {"currency", price.currency},
                             {"set_at", UtcNowIso8601()},
                             {"source", "agent"}}));
  return tx.Commit();
}

StatusOr<json> HostStore::SetHostPrice(const std::string& host, const HostPrice& price) {
  ASSIGN_OR_RETURN(auto find, db_->Prepare("SELECT host_id FROM hosts WHERE name = ?1"));
  find.Bind(1, host);
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return NotFound("no host named \"" + host + "\" has registered");
  const int64_t host_id = find.Int(0);
  const std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(InsertRow(*db_, "host_prices",
                            {{"host_id", host_id},
                             {"per_hour", price.per_hour},
                             {"currency", price.currency},
                             {"set_at", now},
                             {"source", "cli"}}));
  RETURN_IF_ERROR(tx.Commit());
  return json{
      {"host", host}, {"per_hour", price.per_hour}, {"currency", price.currency}, {"set_at", now}};
}

}  // namespace benchfleet
