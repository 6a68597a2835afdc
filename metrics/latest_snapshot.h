// LatestSnapshot<T>: what a daemon's loop last published for scrapes to render. The loop
// swaps a pointer under a mutex (Publish); a scrape copies that pointer under the same
// mutex and renders outside it, so the loop never waits for a scrape and a scrape never
// reads the loop's state. A snapshot is freed by whichever lets go of it last.
#pragma once

#include <memory>
#include <mutex>

namespace benchfleet {

template <typename T>
class LatestSnapshot {
 public:
  // Replaces what scrapes show; never waits for a scrape in progress (it renders its
  // own copy of the pointer).
  void Publish(std::shared_ptr<const T> snapshot) {
    std::shared_ptr<const T> previous;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      previous = std::move(latest_);
      latest_ = std::move(snapshot);
    }
    // `previous` is freed here, outside the lock (or by the last scrape rendering it).
  }
  // The latest snapshot published; null before the first.
  std::shared_ptr<const T> Latest() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return latest_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const T> latest_;  // guarded by mutex_
};

}  // namespace benchfleet
