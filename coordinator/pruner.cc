#include "coordinator/pruner.h"

namespace benchfleet {

StatusOr<SamplePruner> SamplePruner::Start(Store& store, double older_than_s) {
  if (!(older_than_s >= 0)) return InvalidArgument("prune: the age must be >= 0 seconds");
  SamplePruner pruner;
  ASSIGN_OR_RETURN(pruner.cutoff_, store.ReceivedAtCutoff(older_than_s));
  ASSIGN_OR_RETURN(pruner.last_, store.LastSampledJobId());
  ASSIGN_OR_RETURN(pruner.progress_.bytes_before, store.SizeBytes());
  return pruner;
}

StatusOr<bool> SamplePruner::Step(Store& store, Millis budget) {
  const MonoTime deadline = MonoNow() + budget;
  do {
    if (!reclaiming_) {
      const int64_t upto = std::min(last_, after_ + kJobIdsPerStep);
      ASSIGN_OR_RETURN(int dropped, store.DropSamples(cutoff_, after_, upto));
      progress_.results_pruned += dropped;
      after_ = upto;
      reclaiming_ = after_ >= last_;
    } else {
      ASSIGN_OR_RETURN(int64_t free_pages, store.ReclaimFreePages(kPagesPerStep));
      if (free_pages == 0) {
        ASSIGN_OR_RETURN(progress_.bytes_after, store.SizeBytes());
        return true;
      }
    }
  } while (MonoNow() < deadline);
  return false;
}

}  // namespace benchfleet
