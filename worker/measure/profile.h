// `profile: true`: after timing, one block of iterations runs under LibTorch's profiler
// and the operators that took the most self time go into the result's op_profile
// (schemas/worker.md). The block is never part of the timed samples. Torch-free header.
#ifndef BENCHFLEET_WORKER_MEASURE_PROFILE_H_
#define BENCHFLEET_WORKER_MEASURE_PROFILE_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace benchfleet::worker {

// The profiled block: the timed block (stats.iters_per_sample iterations), or longer,
// to last at least kMinProfileSeconds at the median (one iteration of a few ms is at the
// mercy of a single preemption), but at most kMaxProfileIterations: the profiler's own
// cost per operator call makes a longer block slow to record without making it more
// representative.
inline constexpr double kMinProfileSeconds = 0.2;
inline constexpr int64_t kMaxProfileIterations = 100;
int64_t ProfileIterations(int64_t iters_per_sample, double median_ms);

// One call of an operator on the CPU, as the profiler saw it.
struct ProfiledCall {
  std::string name;
  uint64_t thread = 0;
  uint64_t start_us = 0;
  uint64_t duration_us = 0;
  std::vector<std::vector<int64_t>> input_shapes;
  // A GPU job's: the device time of the kernels (and copies) this call launched itself,
  // linked to it by the profiler's correlation ids (Kineto's CUDA activity), us.
  double device_us = 0;
};

// What an op_profile's times are: "cpu", each call's wall time on its thread; "device",
// the device time of the kernels each call launched (a GPU job's: Kineto's CUDA
// activity), where the host-side time of an operator would be its launch, not its work.
enum class ProfileTime { kCpu, kDevice };
const char* ProfileTimeName(ProfileTime time);

// The top `rows` operators by self time, as op_profile rows {op, calls, self_us, total_us,
// input_shapes}. A call's self time is its duration (kDevice: its own kernels' device
// time) less that of the calls nested in it on the same thread (kDevice: nothing, its own
// kernels are its self time); its total time adds the nested calls'. An operator's
// input_shapes are those of its calls with the most self time together. Names are cut to
// kMaxOpNameBytes (common/op_profile.h).
nlohmann::json TopOperators(const std::vector<ProfiledCall>& calls, size_t rows,
                            ProfileTime time = ProfileTime::kCpu);

// Runs `iterations` iterations and then `block_end` (when set) under the profiler;
// returns TopOperators of what it recorded, in `time` (kDevice records the CUDA activity
// too). Throws what the iterations throw.
nlohmann::json ProfileOperators(const std::function<void()>& iteration,
                                const std::function<void()>& block_end, int64_t iterations,
                                ProfileTime time = ProfileTime::kCpu);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_PROFILE_H_
