#include "common/json_read.h"

#include "common/protocol.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// The field, or nullptr when it is absent or null.
const json* Present(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

Status Missing(const std::string& where, const char* key) {
  return InvalidArgument(where + "." + key + ": missing");
}

std::string RangeText(IntegerRange range) {
  if (range.max == std::numeric_limits<int64_t>::max()) return ">= " + std::to_string(range.min);
  return "in [" + std::to_string(range.min) + ", " + std::to_string(range.max) + "]";
}

StatusOr<int64_t> IntegerOf(const json& value, const std::string& where, const char* key,
                            IntegerRange range) {
  // An unsigned above int64's range is refused as out of range, not wrapped.
  const bool fits =
      value.is_number_integer() &&
      (!value.is_number_unsigned() ||
       value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!fits || value.get<int64_t>() < range.min || value.get<int64_t>() > range.max) {
    return InvalidArgument(where + "." + key + ": must be an integer " + RangeText(range) +
                           ", got " + ShownValue(value));
  }
  return value.get<int64_t>();
}

StatusOr<std::string> TextOf(const json& value, const std::string& where, const char* key,
                             size_t max_bytes) {
  if (!value.is_string())
    return InvalidArgument(where + "." + key + ": must be a string, got " + ShownValue(value));
  const std::string& text = value.get_ref<const std::string&>();
  if (text.size() > max_bytes) {
    return InvalidArgument(where + "." + key + ": longer than " + std::to_string(max_bytes) +
                           " bytes");
  }
  return text;
}

StatusOr<bool> FlagOf(const json& value, const std::string& where, const char* key) {
  if (!value.is_boolean()) {
    return InvalidArgument(where + "." + key + ": must be true or false, got " + ShownValue(value));
  }
  return value.get<bool>();
}

}  // namespace

StatusOr<int64_t> ReadInteger(const json& object, const std::string& where, const char* key,
                              IntegerRange range) {
  const json* value = Present(object, key);
  if (value == nullptr) return Missing(where, key);
  return IntegerOf(*value, where, key, range);
}

StatusOr<std::optional<int64_t>> ReadOptionalInteger(const json& object, const std::string& where,
                                                     const char* key, IntegerRange range) {
  const json* value = Present(object, key);
  if (value == nullptr) return std::optional<int64_t>();
  ASSIGN_OR_RETURN(int64_t read, IntegerOf(*value, where, key, range));
  return std::optional<int64_t>(read);
}

StatusOr<int64_t> ReadIntegerOr(const json& object, const std::string& where, const char* key,
                                IntegerRange range, int64_t fallback) {
  const json* value = Present(object, key);
  if (value == nullptr) return fallback;
  return IntegerOf(*value, where, key, range);
}

StatusOr<std::string> ReadText(const json& object, const std::string& where, const char* key,
                               size_t max_bytes) {
  const json* value = Present(object, key);
  if (value == nullptr) return Missing(where, key);
  return TextOf(*value, where, key, max_bytes);
}

StatusOr<std::optional<std::string>> ReadOptionalText(const json& object, const std::string& where,
                                                      const char* key, size_t max_bytes) {
  const json* value = Present(object, key);
  if (value == nullptr) return std::optional<std::string>();
  ASSIGN_OR_RETURN(std::string read, TextOf(*value, where, key, max_bytes));
  return std::optional<std::string>(std::move(read));
}

StatusOr<bool> ReadFlag(const json& object, const std::string& where, const char* key) {
  const json* value = Present(object, key);
  if (value == nullptr) return Missing(where, key);
  return FlagOf(*value, where, key);
}

StatusOr<std::optional<bool>> ReadOptionalFlag(const json& object, const std::string& where,
                                               const char* key) {
  const json* value = Present(object, key);
  if (value == nullptr) return std::optional<bool>();
  ASSIGN_OR_RETURN(bool read, FlagOf(*value, where, key));
  return std::optional<bool>(read);
}

}  // namespace benchfleet
