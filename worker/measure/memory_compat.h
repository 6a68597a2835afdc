// c10's allocator hook (MemoryReportingInfoBase::reportMemoryUsage) takes the totals as
// int64_t through LibTorch 1.13 and as size_t from 2.x. The type is read off the
// declaration itself, so the override below compiles against either. Include only from
// step_memory.cc.
#ifndef BENCHFLEET_WORKER_MEASURE_MEMORY_COMPAT_H_
#define BENCHFLEET_WORKER_MEASURE_MEMORY_COMPAT_H_

#include <c10/core/Allocator.h>

namespace benchfleet::worker::memory_compat {

template <typename Method>
struct TotalsOf;
template <typename Class, typename Ret, typename Ptr, typename Size, typename Total,
          typename Reserved, typename Device>
struct TotalsOf<Ret (Class::*)(Ptr, Size, Total, Reserved, Device)> {
  using type = Total;
};

// The type of reportMemoryUsage's total_allocated and total_reserved.
using ReportedTotal = TotalsOf<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::type;

}  // namespace benchfleet::worker::memory_compat

#endif  // BENCHFLEET_WORKER_MEASURE_MEMORY_COMPAT_H_
