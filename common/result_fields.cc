#include "common/result_fields.h"

#include <cmath>
#include <set>

#include "common/protocol.h"

namespace benchfleet {

// The text of schemas/result_fields.json, compiled in (result_fields_text.cc, generated).
extern const char* const kResultFieldsJson;

namespace {

using nlohmann::json;

struct Tables {
  std::vector<ResultField> result, calibration, rank;
};

const Tables& LoadedTables() {
  static const Tables* tables = [] {
    json doc = json::parse(kResultFieldsJson, nullptr, false);
    auto* t = new Tables;
    // The file is ours and checked by common_test; a broken one is a build defect.
    auto result = ParseFieldTable(doc.is_object() ? doc.value("result", json()) : json(), "result");
    auto calibration =
        ParseFieldTable(doc.is_object() ? doc.value("calibration", json()) : json(), "calibration");
    auto rank = ParseFieldTable(doc.is_object() ? doc.value("rank", json()) : json(), "rank");
    if (!result.ok() || !calibration.ok() || !rank.ok()) {
      fprintf(stderr, "schemas/result_fields.json is invalid: %s%s%s\n",
              result.ok() ? "" : result.status().message().c_str(),
              calibration.ok() ? "" : calibration.status().message().c_str(),
              rank.ok() ? "" : rank.status().message().c_str());
      abort();
    }
    t->result = std::move(*result);
    t->calibration = std::move(*calibration);
    t->rank = std::move(*rank);
    return t;
  }();
  return *tables;
}

bool HasType(const json& value, FieldType type) {
  switch (type) {
    case FieldType::kReal:
      return value.is_number();
    case FieldType::kInteger:
      return value.is_number_integer();
    case FieldType::kBoolean:
      return value.is_boolean();
    case FieldType::kText:
      return value.is_string();
    case FieldType::kObject:
      return value.is_object();
    case FieldType::kArray:
      return value.is_array();
  }
  return false;
}

}  // namespace

const std::vector<ResultField>& ResultFields() { return LoadedTables().result; }
const std::vector<ResultField>& CalibrationFields() { return LoadedTables().calibration; }
const std::vector<ResultField>& RankFields() { return LoadedTables().rank; }

const char* SqlType(FieldType type) {
  switch (type) {
    case FieldType::kReal:
      return "REAL";
    case FieldType::kInteger:
    case FieldType::kBoolean:
      return "INTEGER";
    default:
      return "TEXT";
  }
}

const char* FieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kReal:
      return "real";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kText:
      return "text";
    case FieldType::kObject:
      return "object";
    case FieldType::kArray:
      return "array";
  }
  return "?";
}

const json* FindPath(const json& object, const std::string& path) {
  const json* at = &object;
  size_t start = 0;
  while (true) {
    if (!at->is_object()) return nullptr;
    size_t dot = path.find('.', start);
    auto it =
        at->find(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string::npos) return at;
    start = dot + 1;
  }
}

Status CheckField(const ResultField& field, const json& value, const std::string& where) {
  if (value.is_null()) return Status::Ok();
  const std::string name = where + "." + field.path;
  static const char* const kArticle[] = {"a number", "an integer", "a boolean",
                                         "a string", "an object",  "an array"};
  if (!HasType(value, field.type)) {
    return InvalidArgument(name + ": must be " + kArticle[static_cast<int>(field.type)] + ", got " +
                           ShownValue(value));
  }
  if (value.is_number()) {
    double x = value.get<double>();
    if (!std::isfinite(x) || (field.min && x < *field.min) || (field.max && x > *field.max)) {
      std::string range = field.min && field.max ? " in [" + ShownValue(*field.min) + ", " +
                                                       ShownValue(*field.max) + "]"
                          : field.min ? " >= " + ShownValue(*field.min)
                          : field.max ? " <= " + ShownValue(*field.max)
                                      : "";
      return InvalidArgument(name + ": must be a finite number" + range + ", got " +
                             ShownValue(value));
    }
  }
  return Status::Ok();
}

Status CheckFields(const std::vector<ResultField>& fields, const json& object,
                   const std::string& where, bool require) {
  if (!object.is_object()) return InvalidArgument(where + ": must be an object");
  for (const ResultField& field : fields) {
    // Every object on the way must be an object (or absent / null).
    const json* at = &object;
    size_t start = 0;
    bool reached = true;
    while (true) {
      size_t dot = field.path.find('.', start);
      std::string step =
          field.path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      auto it = at->find(step);
      if (it == at->end() || it->is_null()) {
        reached = false;
        break;
      }
      if (dot == std::string::npos) {
        RETURN_IF_ERROR(CheckField(field, *it, where));
        break;
      }
      if (!it->is_object()) {
        return InvalidArgument(where + "." + field.path.substr(0, dot) +
                               ": must be an object, got " + ShownValue(*it));
      }
      at = &*it;
      start = dot + 1;
    }
    if (!reached && require && field.required) {
      return InvalidArgument(where + "." + field.path +
                             ": missing (a successful result must carry it)");
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<ResultField>> ParseFieldTable(const json& table, const std::string& where) {
  if (!table.is_array()) return InvalidArgument(where + ": must be an array of fields");
  std::vector<ResultField> fields;
  std::set<std::string> columns, paths;
  for (size_t i = 0; i < table.size(); ++i) {
    const json& entry = table[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.value("path", json()).is_string() ||
        !entry.value("type", json()).is_string()) {
      return InvalidArgument(at + ": needs \"path\" and \"type\" strings");
    }
    ResultField field;
    field.path = entry["path"];
    const std::string type = entry["type"];
    const std::vector<std::pair<std::string, FieldType>> kTypes = {
        {"real", FieldType::kReal},       {"integer", FieldType::kInteger},
        {"boolean", FieldType::kBoolean}, {"text", FieldType::kText},
        {"object", FieldType::kObject},   {"array", FieldType::kArray}};
    bool known = false;
    for (const auto& [name, kind] : kTypes) {
      if (name == type) {
        field.type = kind;
        known = true;
      }
    }
    if (!known) return InvalidArgument(at + ": unknown type \"" + type + "\"");
    json column = entry.value("column", json());
    if (column.is_string()) field.column = column;
    if (!field.column.empty()) {
      bool identifier = std::all_of(field.column.begin(), field.column.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      });
      if (!identifier || !columns.insert(field.column).second) {
        return InvalidArgument(at + ": column \"" + field.column +
                               "\" is not a unique lower_case name");
      }
      if (field.type == FieldType::kObject || field.type == FieldType::kArray) {
        return InvalidArgument(at + ": objects and arrays have no column");
      }
    }
    if (!paths.insert(field.path).second) return InvalidArgument(at + ": path declared twice");
    if (entry.value("min", json()).is_number()) field.min = entry["min"].get<double>();
    if (entry.value("max", json()).is_number()) field.max = entry["max"].get<double>();
    field.required = entry.value("required", json(false)) == true;
    field.show = entry.value("show", json(false)) == true;
    if (entry.value("doc", json()).is_string()) field.doc = entry["doc"];
    fields.push_back(std::move(field));
  }
  return fields;
}

}  // namespace benchfleet
