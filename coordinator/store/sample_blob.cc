#include "coordinator/store/sample_blob.h"

#include <cstdint>
#include <cstring>
#include <map>

namespace benchfleet {
namespace {

void AppendFloat32Le(float value, std::string* out) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  for (int byte = 0; byte < 4; ++byte)
    out->push_back(static_cast<char>((bits >> (8 * byte)) & 0xff));
}

// The aggregate's state: samples by index (rows may come in any order).
struct PackState {
  std::map<int64_t, double>* by_index;
};

void PackStep(sqlite3_context* context, int /*argc*/, sqlite3_value** argv) {
  auto* state = static_cast<PackState*>(sqlite3_aggregate_context(context, sizeof(PackState)));
  if (state == nullptr) {
    sqlite3_result_error_nomem(context);
    return;
  }
  if (state->by_index == nullptr) state->by_index = new std::map<int64_t, double>();
  (*state->by_index)[sqlite3_value_int64(argv[0])] = sqlite3_value_double(argv[1]);
}

void PackFinal(sqlite3_context* context) {
  auto* state = static_cast<PackState*>(sqlite3_aggregate_context(context, 0));
  if (state == nullptr || state->by_index == nullptr) {
    sqlite3_result_zeroblob(context, 0);
    return;
  }
  std::vector<double> samples;
  samples.reserve(state->by_index->size());
  for (const auto& [index, ms] : *state->by_index) samples.push_back(ms);
  delete state->by_index;
  state->by_index = nullptr;
  const std::string blob = PackSamples(samples);
  sqlite3_result_blob(context, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
}

}  // namespace

std::string PackSamples(const std::vector<double>& samples_ms) {
  std::string blob;
  blob.reserve(samples_ms.size() * 4);
  for (double ms : samples_ms) AppendFloat32Le(static_cast<float>(ms), &blob);
  return blob;
}

StatusOr<std::vector<double>> UnpackSamples(const std::string& blob) {
  if (blob.size() % 4 != 0) {
    return InvalidArgument("a samples BLOB of " + std::to_string(blob.size()) +
                           " bytes: not a whole number of float32");
  }
  std::vector<double> samples;
  samples.reserve(blob.size() / 4);
  for (size_t at = 0; at < blob.size(); at += 4) {
    uint32_t bits = 0;
    for (int byte = 0; byte < 4; ++byte) {
      bits |= static_cast<uint32_t>(static_cast<unsigned char>(blob[at + byte])) << (8 * byte);
    }
    float value = 0;
    std::memcpy(&value, &bits, sizeof value);
    samples.push_back(value);
  }
  return samples;
}

Status RegisterSampleFunctions(sqlite3* db) {
  int rc = sqlite3_create_function_v2(db, "benchfleet_pack_samples", 2,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, nullptr,
                                      PackStep, PackFinal, nullptr);
  if (rc != SQLITE_OK)
    return Internal(std::string("benchfleet_pack_samples: ") + sqlite3_errmsg(db));
  return Status::Ok();
}

}  // namespace benchfleet
