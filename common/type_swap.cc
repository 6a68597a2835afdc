#include "common/type_swap.h"

#include <cstdint>
#include <limits>

namespace benchfleet {
namespace {

using nlohmann::json;

void Collect(const json& value, const json::json_pointer& at,
             std::vector<json::json_pointer>* out) {
  out->push_back(at);
  if (value.is_object()) {
    for (const auto& [key, member] : value.items()) Collect(member, at / key, out);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) Collect(value[i], at / i, out);
  }
}

}  // namespace

std::vector<json::json_pointer> AllPointers(const json& document) {
  std::vector<json::json_pointer> out;
  Collect(document, json::json_pointer(), &out);
  return out;
}

const std::vector<json>& SwapValues() {
  static const auto* values = new std::vector<json>{
      json(nullptr),
      json(true),
      json(0),
      json(-1),
      json(std::numeric_limits<int64_t>::max()),
      json(std::numeric_limits<uint64_t>::max()),
      json(1.5),
      json(-1e308),
      json(""),
      json("x"),
      json::array(),
      json::array({1, "a", nullptr}),
      json::object(),
      json::object({{"k", json::array()}}),
  };
  return *values;
}

json Swapped(const json& document, const json::json_pointer& pointer, const json& value) {
  if (pointer.empty()) return value;
  json copy = document;
  copy[pointer] = value;
  return copy;
}

}  // namespace benchfleet
