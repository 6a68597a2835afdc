#include "coordinator/store/pruner.h"

#include <algorithm>

namespace benchfleet {

StatusOr<SamplePruner> SamplePruner::Start(RetentionStore& store, double older_than_s) {
  if (!(older_than_s >= 0)) return InvalidArgument("prune: the age must be >= 0 seconds");
  SamplePruner pruner;
  ASSIGN_OR_RETURN(pruner.cutoff_, store.ReceivedAtCutoff(older_than_s));
  ASSIGN_OR_RETURN(pruner.last_, store.LastSampledJobId());
  ASSIGN_OR_RETURN(pruner.progress_.bytes_before, store.SizeBytes());
  return pruner;
}

int64_t SamplePruner::Adapt(int64_t size, Millis took, Millis budget, int64_t max) {
  if (took > budget) return std::max<int64_t>(1, size / 2);
  if (took * 4 < budget) return std::min(max, size * 2);
  return size;
}

StatusOr<bool> SamplePruner::Step(RetentionStore& store, Millis budget) {
  const MonoTime deadline = MonoNow() + budget;
  do {
    const MonoTime started = MonoNow();
    if (!reclaiming_) {
      const int64_t upto = std::min(last_, after_ + job_ids_per_step_);
      ASSIGN_OR_RETURN(int dropped, store.DropSamples(cutoff_, after_, upto));
      progress_.results_pruned += dropped;
      after_ = upto;
      reclaiming_ = after_ >= last_;
      job_ids_per_step_ =
          Adapt(job_ids_per_step_, std::chrono::duration_cast<Millis>(MonoNow() - started), budget,
                100000);
    } else {
      ASSIGN_OR_RETURN(int64_t free_pages,
                       store.ReclaimFreePages(static_cast<int>(pages_per_step_)));
      if (free_pages == 0) {
        ASSIGN_OR_RETURN(progress_.bytes_after, store.SizeBytes());
        return true;
      }
      pages_per_step_ = Adapt(
          pages_per_step_, std::chrono::duration_cast<Millis>(MonoNow() - started), budget, 100000);
    }
  } while (MonoNow() < deadline);
  return false;
}

}  // namespace benchfleet
