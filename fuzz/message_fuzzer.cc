// libFuzzer target over everything benchfleet parses from outside, through the
// coordinator's real handlers: each input is one frame, decoded (common/protocol) and
// parsed as a sweep file (common/sweep), then handed to an in-process coordinator — a
// :memory: store with a registered agent holding a leased job — as a message from that
// agent and as one from a client. Any crash, sanitizer report, exception escaping or a
// handler needing its last-resort guard (handler_exceptions) is a finding.
//
// Structure-aware: the custom mutator parses the input as JSON and, most of the time,
// replaces one value at a random depth with a value of another JSON type (the type-swap
// of common/type_swap.h), starting from the seeds deploy/fuzz.sh gives it: every golden
// message (schemas/golden/), the example sweeps (examples/) and fuzz/corpus/.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "common/protocol.h"
#include "common/sweep.h"
#include "common/type_swap.h"
#include "coordinator/coordinator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using benchfleet::json;

// Inputs handled by one coordinator before a fresh one (bounds the store's growth).
constexpr int kInputsPerCoordinator = 20000;

const char* const kAgent = "fuzz-agent/1";

json FuzzCapabilities() {
  return {{"host", {{"machine_id", "fuzz"}, {"cpu_model", "fuzz cpu"}}},
          {"torch", {{"cuda_available", false}}},
          {"gpus", json::array({{{"index", 0}, {"name", "NVIDIA H100"}, {"memory_mb", 1000}}})},
          {"cpus", "0"}};
}

std::unique_ptr<benchfleet::Coordinator> NewCoordinator() {
  benchfleet::CoordinatorOptions options;
  options.default_processes = 1;  // each job runs once
  options.db_path = ":memory:";
  // The models its inputs upload (model_upload) are kept out of the working tree.
  options.models_dir = (std::filesystem::temp_directory_path() /
                        ("benchfleet-fuzz-models-" + std::to_string(getpid())))
                           .string();
  options.heartbeat_ms = 3600 * 1000;  // nothing expires while fuzzing
  auto coordinator = std::make_unique<benchfleet::Coordinator>(options);
  benchfleet::Status started = coordinator->StartInProcess(
      [](benchfleet::Side, const std::string&, const benchfleet::Message&) {
        return benchfleet::Status::Ok();
      });
  if (!started.ok()) abort();
  coordinator->HandleAgent({kAgent, json({{"v", 1},
                                          {"type", "register"},
                                          {"agent", "fuzz-agent"},
                                          {"tags", json::array({"fuzz"})},
                                          {"capabilities", FuzzCapabilities()}})
                                        .dump()});
  coordinator->HandleClient(
      {"fuzz-client", json({{"v", 1},
                            {"type", "submit"},
                            {"request_id", 1},
                            {"sweep", json::parse(R"({"name": "fuzz", "placement": "any",
                                "matrix": {"model": "mlp", "batch_size": [1, 2, 3, 4, 5, 6, 7, 8]}})")}})
                          .dump()});
  coordinator->Tick();  // job 1, attempt 1 is now leased to the agent
  return coordinator;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<benchfleet::Coordinator> coordinator;
  static int handled = 0;
  if (!coordinator || ++handled % kInputsPerCoordinator == 0) coordinator = NewCoordinator();

  const std::string input(reinterpret_cast<const char*>(data), size);
  auto message = benchfleet::Decode(input);
  if (message.ok()) (void)benchfleet::Encode(*message);
  auto sweep = benchfleet::ParseSweepText(input);
  if (sweep.ok()) (void)benchfleet::JobTimeoutSeconds(*sweep);

  coordinator->HandleAgent({kAgent, input});
  coordinator->HandleClient({"fuzz-client", input});
  coordinator->DeliverReadReplies(benchfleet::Millis(0));
  coordinator->Tick();
  if (coordinator->counters().handler_exceptions != 0) abort();  // a handler threw
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::minstd_rand random(seed);
  json document = json::parse(std::string(reinterpret_cast<char*>(data), size), nullptr, false);
  if (document.is_discarded() || random() % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  auto pointers = benchfleet::AllPointers(document);
  const auto& values = benchfleet::SwapValues();
  const auto& pointer = pointers[random() % pointers.size()];
  json mutated = benchfleet::Swapped(document, pointer, values[random() % values.size()]);
  std::string text = mutated.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::copy(text.begin(), text.end(), data);
  return text.size();
}
