// Time sources. Durations and deadlines use the monotonic clock only; wall-clock time
// is used for timestamps shown to people and stored in the database, never for timeouts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace benchfleet {

using MonoClock = std::chrono::steady_clock;
using MonoTime = MonoClock::time_point;
using Millis = std::chrono::milliseconds;

inline MonoTime MonoNow() { return MonoClock::now(); }

// "Now" as a dependency. The coordinator reads the time its leases, liveness windows,
// heartbeats and back-offs run on through one of these, so a test can move time on
// (a lease running out, an agent falling silent) without waiting for it. Budgets of
// real work (a loop round's slice, a query's time limit) read MonoNow(): they measure
// work done, not time passing in the protocol.
class MonotonicClock {
 public:
  virtual ~MonotonicClock() = default;
  virtual MonoTime Now() const = 0;
};

// The system's steady clock; lives for the whole program.
const MonotonicClock& SystemMonotonicClock();

// A clock that stands still until it is moved: for tests. Starts at the system clock's
// now, so times it gives compare sensibly with times taken before.
class ManualMonotonicClock final : public MonotonicClock {
 public:
  ManualMonotonicClock() : now_(MonoClock::now()) {}
  MonoTime Now() const override { return now_; }
  void Advance(Millis by) { now_ += by; }

 private:
  MonoTime now_;
};

inline int64_t MillisUntil(MonoTime deadline, MonoTime now = MonoNow()) {
  auto left = std::chrono::duration_cast<Millis>(deadline - now).count();
  return left < 0 ? 0 : left;
}

// Wall-clock microseconds since the Unix epoch: a timestamp another process reads
// (the job offer's committed_at_us), never a duration on this host.
int64_t UnixMicrosNow();

// UTC, ISO 8601 with milliseconds (truncated): "2026-11-29T15:17:21.123Z". The one
// format of every stored time, so times compare as text.
std::string UtcIso8601(int64_t unix_micros);
inline std::string UtcNowIso8601() { return UtcIso8601(UnixMicrosNow()); }
// The inverse, for times this program stored: "YYYY-MM-DDTHH:MM:SS.mmmZ" (the
// milliseconds optional). Returns false for anything else.
bool ParseUtcIso8601(const std::string& text, int64_t* unix_micros);

}  // namespace benchfleet
