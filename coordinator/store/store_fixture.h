// The fixture of the store's tests: a fresh results.db in its own directory, one host,
// and helpers that deliver results and read rows back as a user's query would.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/result_fields.h"
#include "coordinator/core/fingerprint.h"
#include "coordinator/store/sample_blob.h"
#include "coordinator/store/store.h"
#include "sqlite/reader.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-store-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "results.db").string();
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    host_ = *store_->hosts().UpsertHost("node-a", "m1", json::array({"lab"}),
                                        {{"host", {{"cpu_model", "x"}}}});
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Sweep MakeSweep(const std::string& text) {
    auto sweep = ParseSweepText(text);
    EXPECT_TRUE(sweep.ok()) << sweep.status().ToString();
    return *sweep;
  }

  json GoodResult(int batch) {
    return {{"ok", true},
            {"device", "cpu"},
            {"model", "mlp"},
            {"mode", "inference"},
            {"dtype", "fp32"},
            {"batch_size", batch},
            {"threads", 1},
            {"stats",
             {{"n", 12},
              {"median_ms", 2.0},
              {"mean_ms", 2.1},
              {"min_ms", 1.9},
              {"max_ms", 3.0},
              {"p90_ms", 2.5},
              {"p99_ms", 2.9},
              {"iqr_ms", 0.1},
              {"noisy", false}}},
            {"samples_ms", {2.0, 2.1, 1.9}},
            {"throughput_per_s", batch * 1000 / 2.0},
            {"peak_rss_mb", 200.0},
            {"effective_threads", 1.0}};
  }

  int64_t Count(const std::string& sql) {
    auto rows = Query(sql, 10);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows->rows.at(0).at(0).get<int64_t>();
  }

  StatusOr<Rows> Query(const std::string& sql, int max_rows) {
    auto reader = StoreReader::Open(path_);
    if (!reader.ok()) return reader.status();
    return (*reader)->Query(sql, max_rows);
  }

  // Every queued job the agent "node-a" could be offered, in dispatch order
  // (calibrations first, then oldest first).
  std::vector<QueuedJob> QueuedFor(const std::string& agent) {
    std::vector<QueuedJob> all;
    auto requirements = store_->jobs().Requirements();
    for (const JobRequirement& requirement : *requirements) {
      if (!requirement.pinned_host.empty() && requirement.pinned_host != agent) continue;
      auto jobs = store_->jobs().OldestQueued(requirement.requirement_id, 100000);
      all.insert(all.end(), jobs->begin(), jobs->end());
    }
    std::sort(all.begin(), all.end(), [](const QueuedJob& a, const QueuedJob& b) {
      if ((a.kind == "calibration") != (b.kind == "calibration")) return a.kind == "calibration";
      return a.job_id < b.job_id;
    });
    return all;
  }

  // A sweep and every job of it stored at once, by the steps SweepIntake takes for a
  // small one (or the sweep stored before under the same submission id).
  StatusOr<StoredSweep> StoreWholeSweep(const Sweep& sweep, const PinnedAgents& pinned,
                                        const std::string& submission_id = "") {
    JobQueue& jobs = store_->jobs();
    ASSIGN_OR_RETURN(std::optional<StoredSweep> existing, jobs.FindSubmission(submission_id));
    if (existing) return *existing;
    ASSIGN_OR_RETURN(StoredSweep stored, jobs.AcceptSweep(sweep, pinned, submission_id));
    ASSIGN_OR_RETURN(bool whole,
                     jobs.StoreJobs(stored.sweep_id, sweep, pinned, 0, sweep.combination_count));
    if (!whole)
      return Internal("sweep " + std::to_string(stored.sweep_id) + " did not take its jobs");
    return stored;
  }

  StatusOr<ResultOutcome> Deliver(int64_t job, int attempt, const json& result,
                                  std::string* rejection = nullptr) {
    auto parsed = ParseWorkerResult(result);
    if (!parsed.ok()) return parsed.status();
    std::string ignored;
    return store_->results().Write(job, attempt, host_, "node-a", *parsed,
                                   rejection ? rejection : &ignored);
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  int64_t host_ = 0;
};

// A sweep of two jobs (batch sizes 1 and 8).
inline constexpr const char* kTwoJobs =
    R"({"name":"s","matrix":{"model":["mlp"],"batch_size":[1,8]}})";

}  // namespace benchfleet
