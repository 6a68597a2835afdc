// Structure-aware mutations of a JSON message for robustness tests and fuzzing: every
// value at every depth (object members, array elements, the whole document) replaced by
// a value of each other JSON type. A peer written against schemas/protocol.md that gets
// one type wrong produces exactly such a message.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

namespace benchfleet {

// Every JSON pointer into `document`, the root ("") included, in document order.
std::vector<nlohmann::json::json_pointer> AllPointers(const nlohmann::json& document);

// Values of every JSON type (and the edges of numbers) that stand in for a field.
const std::vector<nlohmann::json>& SwapValues();

// `document` with the value at `pointer` replaced by `value`.
nlohmann::json Swapped(const nlohmann::json& document, const nlohmann::json::json_pointer& pointer,
                       const nlohmann::json& value);

// Calls visit(variant) for each pointer and each swap value of another type than the
// value it replaces. Returns the number of variants visited.
template <typename Visit>
size_t ForEachTypeSwap(const nlohmann::json& document, Visit visit) {
  size_t count = 0;
  for (const auto& pointer : AllPointers(document)) {
    const nlohmann::json& original = document[pointer];
    for (const nlohmann::json& value : SwapValues()) {
      if (value.type() == original.type()) continue;
      visit(Swapped(document, pointer, value));
      ++count;
    }
  }
  return count;
}

}  // namespace benchfleet
