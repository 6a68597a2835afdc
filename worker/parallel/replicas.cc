#include "worker/parallel/replicas.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace benchfleet::worker {
namespace {

std::string MarkPath(const ReplicaSpec& replica, const std::string& stage, std::int64_t index) {
  return replica.barrier + "/" + stage + "-" + std::to_string(index);
}

}  // namespace

void MarkReplica(const ReplicaSpec& replica, const std::string& stage) {
  std::ofstream(MarkPath(replica, stage, replica.index)) << "\n";
}

bool AllReplicasAt(const ReplicaSpec& replica, const std::string& stage) {
  std::error_code ec;
  for (std::int64_t i = 0; i < replica.count; ++i) {
    if (!std::filesystem::exists(MarkPath(replica, stage, i), ec)) return false;
  }
  return true;
}

std::string WaitForReplicas(const ReplicaSpec& replica, const std::string& stage,
                            const std::function<void()>& meanwhile) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(kReplicaWaitS));
  while (!AllReplicasAt(replica, stage)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return "replica " + std::to_string(replica.index) + " of " + std::to_string(replica.count) +
             ": the other copies did not reach \"" + stage + "\" within " +
             std::to_string(static_cast<int>(kReplicaWaitS)) + " s (" + replica.barrier + ")";
    }
    if (meanwhile) {
      meanwhile();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return "";
}

}  // namespace benchfleet::worker
