#pragma once
// Reading one field of a JSON object a peer sent, refusing with the field's dotted path
// ("capabilities.host.memory_mb: must be an integer >= 0, got -3"). Every typed message's
// FromJson reads its fields through these, so a refusal reads the same everywhere.
//
// `where` is the object's own path ("result", "schedules.schedules[2]"). An absent field
// and a null one read alike: the plain readers refuse them as missing; the `Optional`
// readers return nullopt and the `Or` readers their fallback.

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"

namespace benchfleet {

// The integers a field accepts, both ends included.
struct IntegerRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};
inline constexpr IntegerRange kAtLeastZero{0, std::numeric_limits<int64_t>::max()};
inline constexpr IntegerRange kAtLeastOne{1, std::numeric_limits<int64_t>::max()};

StatusOr<int64_t> ReadInteger(const nlohmann::json& object, const std::string& where,
                              const char* key, IntegerRange range);
StatusOr<std::optional<int64_t>> ReadOptionalInteger(const nlohmann::json& object,
                                                     const std::string& where, const char* key,
                                                     IntegerRange range);
StatusOr<int64_t> ReadIntegerOr(const nlohmann::json& object, const std::string& where,
                                const char* key, IntegerRange range, int64_t fallback);

// A string of at most `max_bytes` bytes.
StatusOr<std::string> ReadText(const nlohmann::json& object, const std::string& where,
                               const char* key, size_t max_bytes);
StatusOr<std::optional<std::string>> ReadOptionalText(const nlohmann::json& object,
                                                      const std::string& where, const char* key,
                                                      size_t max_bytes);

// true or false.
StatusOr<bool> ReadFlag(const nlohmann::json& object, const std::string& where, const char* key);
StatusOr<std::optional<bool>> ReadOptionalFlag(const nlohmann::json& object,
                                               const std::string& where, const char* key);

}  // namespace benchfleet
