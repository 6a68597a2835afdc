// When an agent leaves by itself, so that a batch allocation (a Slurm job, docs/deploy.md)
// is given back once there is nothing more for it to do:
//   --exit-when-idle S  no job ran, waited or was offered to it for S seconds;
//   --max-jobs N        N jobs ended here (each offer run counts: every process of a job
//                       that runs in several, a calibration), and no more are taken.
// Either way only once it is not busy and every result it made is acknowledged (its
// spool is empty): nothing is lost by leaving. The agent then sends `leave`
// (schemas/protocol.md) and exits 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"

namespace benchfleet {

struct ExitPolicyOptions {
  std::optional<Millis> when_idle;  // --exit-when-idle
  std::optional<int64_t> max_jobs;  // --max-jobs
};

class ExitPolicy {
 public:
  ExitPolicy(ExitPolicyOptions options, MonoTime start) : options_(options), last_active_(start) {}

  // A job was offered, or one runs (or waits for its models or its host check), at `now`.
  void Active(MonoTime now) { last_active_ = std::max(last_active_, now); }
  // A job ended here at `now`, its result spooled.
  void JobEnded(MonoTime now) {
    ++jobs_ended_;
    Active(now);
  }
  // False once --max-jobs jobs ended: further offers are refused.
  bool TakesJobs() const { return !options_.max_jobs || jobs_ended_ < *options_.max_jobs; }
  int64_t jobs_ended() const { return jobs_ended_; }

  // Why to leave now ("idle for 30 s (--exit-when-idle)", "ran 4 jobs (--max-jobs)"), or
  // nullopt: not yet, or never without these options. `busy`: a job runs or waits;
  // `spooled`: results not acknowledged yet.
  std::optional<std::string> Due(MonoTime now, bool busy, size_t spooled) const;

 private:
  ExitPolicyOptions options_;
  MonoTime last_active_;
  int64_t jobs_ended_ = 0;
};

}  // namespace benchfleet
