#include "common/protocol.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/result_fields.h"
#include "common/test_paths.h"

namespace benchfleet {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

const std::filesystem::path kSchemas = test_paths::SchemasDir();

// Every message type has exactly one golden example, it decodes, and protocol.md
// documents it: the spec, the examples and the code cannot drift apart.
// The field table of each message in protocol.md lists exactly the fields the decoder
// checks, with the same type and the same required/optional: spec and code agree field
// by field.
TEST(ProtocolTest, ProtocolMdListsEveryFieldTheDecoderChecks) {
  const std::string spec = ReadFile(kSchemas / "protocol.md");
  for (const std::string& type : AllMessageTypes()) {
    SCOPED_TRACE(type);
    size_t start = spec.find("### `" + type + "`");
    ASSERT_NE(start, std::string::npos);
    size_t end = spec.find("\n### ", start + 1);
    const std::string section =
        spec.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::map<std::string, std::pair<std::string, bool>> documented;
    std::istringstream lines(section);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("| `", 0) != 0) continue;
      // | `name` | type | yes/no | meaning |
      std::vector<std::string> cells;
      std::stringstream row(line.substr(1));
      std::string cell;
      while (std::getline(row, cell, '|')) {
        cell.erase(0, cell.find_first_not_of(' '));
        cell.erase(cell.find_last_not_of(' ') + 1);
        cells.push_back(cell);
      }
      ASSERT_GE(cells.size(), 3u) << line;
      const std::string name = cells[0].substr(1, cells[0].size() - 2);
      ASSERT_TRUE(cells[2] == "yes" || cells[2] == "no") << line;
      // `result.exit`: a field inside the result object, held to result_fields.json below.
      if (name.find('.') != std::string::npos) continue;
      documented[name] = {cells[1], cells[2] == "yes"};
    }
    std::map<std::string, std::pair<std::string, bool>> decoded;
    for (const MessageField& field : MessageFields(type))
      decoded[field.name] = {field.kind, field.required};
    EXPECT_EQ(documented, decoded);
  }
}

// The protocol names a result field's type in words ("a string"), result_fields.json
// in its own terms ("text").
std::string ProtocolTypeName(FieldType type) {
  switch (type) {
    case FieldType::kReal:
      return "a number";
    case FieldType::kInteger:
      return "an integer";
    case FieldType::kBoolean:
      return "a boolean";
    case FieldType::kText:
      return "a string";
    case FieldType::kObject:
      return "an object";
    case FieldType::kArray:
      return "an array";
  }
  return "?";
}

// The fields the agent adds to a worker's result (`result.exit`, ...) are listed in the
// `result` section of protocol.md with the type result_fields.json declares, which is
// the type the coordinator checks; the golden result carries them with that type.
TEST(ProtocolTest, TheAgentsResultFieldsAgreeWithTheResultFieldTable) {
  const std::string spec = ReadFile(kSchemas / "protocol.md");
  const size_t start = spec.find("### `result`");
  ASSERT_NE(start, std::string::npos);
  const std::string section = spec.substr(start, spec.find("\n### ", start + 1) - start);
  const json golden = json::parse(ReadFile(kSchemas / "golden" / "result.json")).at("result");
  std::istringstream lines(section);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("| `result.", 0) != 0) continue;
    SCOPED_TRACE(line);
    const size_t name_end = line.find('`', 3);
    const std::string path =
        line.substr(std::string("| `result.").size(), name_end - std::string("| `result.").size());
    const size_t type_start = line.find("| ", name_end) + 2;
    const std::string type = line.substr(type_start, line.find(" |", type_start) - type_start);
    const ResultField* declared = nullptr;
    for (const ResultField& field : ResultFields()) {
      if (field.path == path) declared = &field;
    }
    ASSERT_NE(declared, nullptr) << path << " is not in result_fields.json";
    EXPECT_EQ(type, ProtocolTypeName(declared->type));
    // stderr_tail comes with failed results only, versus with a pair's side A only; the
    // golden result is a job of one process that succeeded.
    if (path != "stderr_tail" && path != "versus") {
      ASSERT_TRUE(golden.contains(path)) << path;
      EXPECT_TRUE(CheckField(*declared, golden.at(path), "result").ok()) << path;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 5);
}

// Every golden example carries every field its message defines, optional ones too, so
// the examples show the whole message.
TEST(ProtocolTest, GoldenExamplesCarryEveryDefinedField) {
  for (const std::string& type : AllMessageTypes()) {
    SCOPED_TRACE(type);
    json golden = json::parse(ReadFile(kSchemas / "golden" / (type + ".json")));
    for (const MessageField& field : MessageFields(type)) {
      // An error answers a client or names a job, not both: each is optional there.
      if (type == "error" && !field.required) continue;
      EXPECT_TRUE(golden.contains(field.name)) << field.name;
    }
  }
}

TEST(ProtocolTest, EveryMessageTypeHasADecodableGoldenExampleAndASpecSection) {
  const std::string spec = ReadFile(kSchemas / "protocol.md");
  ASSERT_FALSE(spec.empty());
  for (const std::string& type : AllMessageTypes()) {
    SCOPED_TRACE(type);
    std::filesystem::path golden = kSchemas / "golden" / (type + ".json");
    ASSERT_TRUE(std::filesystem::exists(golden)) << golden;
    auto decoded = Decode(ReadFile(golden));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->type, type);
    EXPECT_NE(spec.find("### `" + type + "`"), std::string::npos)
        << "protocol.md has no section for " << type;
  }
  // No golden file for a type the code does not know.
  for (const auto& entry : std::filesystem::directory_iterator(kSchemas / "golden")) {
    std::string stem = entry.path().stem().string();
    EXPECT_NE(std::find(AllMessageTypes().begin(), AllMessageTypes().end(), stem),
              AllMessageTypes().end())
        << "golden example for unknown type " << stem;
  }
}

TEST(ProtocolTest, EncodeDecodeRoundTrip) {
  Message m = MakeMessage(msg::kAck, {{"job_id", 7}, {"attempt", 2}, {"outcome", "stored"}});
  auto decoded = Decode(Encode(m));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->type, "ack");
  EXPECT_EQ(decoded->body["job_id"], 7);
  EXPECT_EQ(decoded->body["v"], 1);
}

struct BadFrame {
  std::string frame;
  std::string expected_words;
};

TEST(ProtocolTest, MalformedFramesAreRejectedWithAReason) {
  const std::vector<BadFrame> cases = {
      {"", "empty frame"},
      {"\xff\xfe garbage", "not valid JSON"},
      {"[1,2,3]", "JSON object"},
      {R"({"type":"status","request_id":1})", "\"v\""},
      {R"({"v":"1","type":"status","request_id":1})", "\"v\""},
      {R"({"v":99,"type":"status","request_id":1})", "unsupported protocol version 99"},
      {R"({"v":1})", "\"type\""},
      {R"({"v":1,"type":7})", "\"type\""},
      {R"({"v":1,"type":"launch_missiles"})", "unknown message type"},
      {R"({"v":1,"type":"result","job_id":1,"attempt":1})", "missing field \"result\""},
      {R"({"v":1,"type":"result","job_id":"1","attempt":1,"result":{}})",
       "field \"job_id\" must be an integer"},
      {R"({"v":1,"type":"submit","request_id":1,"sweep":[]})", "field \"sweep\" must be an object"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.frame);
    auto decoded = Decode(c.frame);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(decoded.status().message().find(c.expected_words), std::string::npos)
        << decoded.status().message();
  }
}

TEST(ProtocolTest, HugeAndDeeplyNestedInputDoesNotCrash) {
  std::string deep(100000, '[');
  auto refused = Decode(deep);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("nested deeper"), std::string::npos);
  EXPECT_EQ(NestingDepth(R"({"a":"[[[[","b":[[1]]})"), 3u);  // brackets in strings do not count
  std::string huge =
      R"({"v":1,"type":"query","request_id":1,"sql":")" + std::string(1 << 20, 'x') + "\"}";
  EXPECT_TRUE(Decode(huge).ok());  // big but within the message limit
}

TEST(ProtocolTest, ErrorEchoesRequestId) {
  Message e = MakeError(InvalidArgument("bad"), "r-9");
  EXPECT_EQ(e.body["request_id"], "r-9");
  EXPECT_EQ(e.body["code"], "invalid_argument");
  EXPECT_TRUE(Decode(Encode(e)).ok());
}

TEST(ProtocolTest, EncodeReplacesInvalidUtf8InsteadOfThrowing) {
  Message m =
      MakeMessage(msg::kError, {{"code", "internal"}, {"message", std::string("\xff\xfe")}});
  std::string encoded;
  ASSERT_NO_THROW(encoded = Encode(m));
  EXPECT_TRUE(Decode(encoded).ok());
}

}  // namespace
}  // namespace benchfleet
