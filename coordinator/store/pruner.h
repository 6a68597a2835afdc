// Retention: drops the raw samples of old results in small steps, so that the
// coordinator's loop keeps serving agents and clients while a year of samples goes
// (benchfleet prune; docs/results.md, Retention). Results and their statistics stay;
// the freed pages go back to the file system.
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "coordinator/store/retention_store.h"

namespace benchfleet {

class SamplePruner {
 public:
  struct Progress {
    int64_t results_pruned = 0;  // results whose raw samples were dropped
    int64_t bytes_before = 0;    // the database's size when the prune started
    int64_t bytes_after = 0;     // ... and when it ended
  };

  // Prunes the samples of results received more than `older_than_s` seconds ago.
  static StatusOr<SamplePruner> Start(RetentionStore& store, double older_than_s);
  // Works for about `budget`, one transaction at a time, each sized to take about half
  // the budget on this disk. Returns true once done; progress() is then final.
  StatusOr<bool> Step(RetentionStore& store, Millis budget);
  const Progress& progress() const { return progress_; }

 private:
  SamplePruner() = default;
  // Halves `size` when a transaction took longer than the budget, doubles it when it
  // took less than a quarter: a slow disk gets small steps, a fast one few commits.
  static int64_t Adapt(int64_t size, Millis took, Millis budget, int64_t max);

  int64_t job_ids_per_step_ = 64;  // job ids looked at per transaction while dropping
  int64_t pages_per_step_ = 64;    // pages given back per transaction while reclaiming
  std::string cutoff_;             // results.received_at before this lose their samples
  int64_t after_ = 0;              // job ids up to here are done
  int64_t last_ = 0;               // the highest job id with samples when the prune started
  bool reclaiming_ = false;
  Progress progress_;
};

}  // namespace benchfleet
