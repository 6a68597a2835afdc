// libFuzzer target over everything benchfleet parses from outside: wire messages
// (common/protocol) and sweep files (common/sweep). Any crash, sanitizer report or
// exception escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/protocol.h"
#include "common/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  auto message = benchfleet::Decode(input);
  if (message.ok()) (void)benchfleet::Encode(*message);
  auto sweep = benchfleet::ParseSweepText(input);
  if (sweep.ok()) (void)benchfleet::JobTimeoutSeconds(*sweep);
  return 0;
}
