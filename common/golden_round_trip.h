// For the message tests: a golden example (schemas/golden/TYPE.json) decoded, and the
// check that a typed message reads it and writes it back unchanged, through the
// transport too.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/agent_messages.h"
#include "common/files.h"
#include "common/protocol.h"
#include "common/test_paths.h"

namespace benchfleet {

inline Message Golden(const std::string& type) {
  const std::filesystem::path golden = std::filesystem::path(test_paths::SchemasDir()) / "golden";
  auto text = ReadWholeFile((golden / (type + ".json")).string());
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto decoded = Decode(text.ok() ? *text : "");
  EXPECT_TRUE(decoded.ok()) << type << ": " << decoded.status().ToString();
  return decoded.ok() ? *decoded : Message{};
}

template <typename T>
void ExpectRoundTrip(const std::string& type) {
  SCOPED_TRACE(type);
  const Message golden = Golden(type);
  ASSERT_EQ(golden.type, T::kType);
  auto parsed = T::FromJson(golden.body);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->ToJson(), golden.body);
  const Message sent = ToMessage(*parsed);
  EXPECT_EQ(sent.type, type);
  // What the sender writes, the transport carries and the receiver reads the same.
  auto decoded = Decode(Encode(sent));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->body, golden.body);
}

}  // namespace benchfleet
