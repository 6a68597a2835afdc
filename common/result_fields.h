// The measured fields of a worker result and of a host calibration, declared once in
// schemas/result_fields.json (compiled in). The coordinator checks each field's type and
// range when a result arrives, the store keeps each field that has a column in a column
// of that name, result_summary shows them, and the CLI shows those marked `show`.
// Adding a metric: emit it in the worker, declare it in result_fields.json.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

enum class FieldType { kReal, kInteger, kBoolean, kText, kObject, kArray };

struct ResultField {
  std::string path;    // dotted path in the result JSON: "stats.median_ms"
  std::string column;  // SQLite column; empty: checked, kept in detail, no column
  FieldType type = FieldType::kReal;
  std::optional<double> min, max;  // inclusive range of numbers
  bool required = false;           // a successful benchmark result must carry it
  bool show = false;               // in `benchfleet results`' table
  std::string doc;
};

// Fields of a worker's result (schemas/worker.md), in declaration order.
const std::vector<ResultField>& ResultFields();
// Fields of a calibration's output (`benchfleet-worker --calibrate`).
const std::vector<ResultField>& CalibrationFields();
// Fields of one rank's entry in a gang's result (`ranks`, schemas/worker.md): the
// columns of the per-rank table result_ranks.
const std::vector<ResultField>& RankFields();

// "REAL", "INTEGER" or "TEXT" (booleans are stored 0/1).
const char* SqlType(FieldType type);
const char* FieldTypeName(FieldType type);

// The value at `path` ("a.b.c") in `object`; nullptr when any step is absent or not an
// object (a wrong type on the way is reported by CheckField, not here).
const nlohmann::json* FindPath(const nlohmann::json& object, const std::string& path);

// Checks one value against its declaration. null is accepted (the field is unknown for
// this result); `where` prefixes the message ("result.stats.median_ms: must be a
// number >= 0, got \"fast\"").
Status CheckField(const ResultField& field, const nlohmann::json& value, const std::string& where);

// Checks every declared field present in `object` (and the objects on their paths).
// When `require` is set, required fields must be present and non-null.
Status CheckFields(const std::vector<ResultField>& fields, const nlohmann::json& object,
                   const std::string& where, bool require);

// Parses a field table (the format of schemas/result_fields.json's lists).
StatusOr<std::vector<ResultField>> ParseFieldTable(const nlohmann::json& table,
                                                   const std::string& where);

}  // namespace benchfleet
