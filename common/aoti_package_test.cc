#include "common/aoti_package.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace benchfleet {
namespace {

using nlohmann::json;

// A zip of `entries` (name, bytes), each stored (method 0) unless `method` says, laid out
// as PKWARE's APPNOTE.TXT does: local headers and data, the central directory, its end.
// CRCs are left 0: the reader checks none (nor does it need to: the package's content is
// checked by its sha256 where it travels).
std::string Zip(const std::vector<std::pair<std::string, std::string>>& entries,
                uint16_t method = 0) {
  std::string out, directory;
  auto u16 = [](std::string* s, uint16_t v) {
    s->push_back(static_cast<char>(v & 0xff));
    s->push_back(static_cast<char>(v >> 8));
  };
  auto u32 = [&](std::string* s, uint32_t v) {
    u16(s, static_cast<uint16_t>(v & 0xffff));
    u16(s, static_cast<uint16_t>(v >> 16));
  };
  for (const auto& [name, data] : entries) {
    const auto offset = static_cast<uint32_t>(out.size());
    u32(&out, 0x04034b50);
    u16(&out, 20);
    u16(&out, 0);
    u16(&out, method);
    u16(&out, 0);
    u16(&out, 0);
    u32(&out, 0);
    u32(&out, static_cast<uint32_t>(data.size()));
    u32(&out, static_cast<uint32_t>(data.size()));
    u16(&out, static_cast<uint16_t>(name.size()));
    u16(&out, 0);
    out += name + data;
    u32(&directory, 0x02014b50);
    u16(&directory, 20);
    u16(&directory, 20);
    u16(&directory, 0);
    u16(&directory, method);
    u16(&directory, 0);
    u16(&directory, 0);
    u32(&directory, 0);
    u32(&directory, static_cast<uint32_t>(data.size()));
    u32(&directory, static_cast<uint32_t>(data.size()));
    u16(&directory, static_cast<uint16_t>(name.size()));
    u16(&directory, 0);
    u16(&directory, 0);
    u16(&directory, 0);
    u16(&directory, 0);
    u32(&directory, 0);
    u32(&directory, offset);
    directory += name;
  }
  const auto directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  u32(&out, 0x06054b50);
  u16(&out, 0);
  u16(&out, 0);
  u16(&out, static_cast<uint16_t>(entries.size()));
  u16(&out, static_cast<uint16_t>(entries.size()));
  u32(&out, static_cast<uint32_t>(directory.size()));
  u32(&out, directory_offset);
  u16(&out, 0);
  return out;
}

class AotiPackageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("aoti_package_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::filesystem::path dir_;
};

const json kCpuMetadata = {{"AOTI_DEVICE_KEY", "cpu"},
                           {"AOTI_PLATFORM", "linux"},
                           {"AOTI_MACHINE", "x86_64"},
                           {"torch_version", "2.15.0+cu132"}};

TEST_F(AotiPackageTest, ReadsWhatThePackagesModelWasCompiledFor) {
  // As aoti_compile_and_package lays one out: the wrapper's metadata beside the kernel's.
  const std::string path = Write(
      "mlp.pt2", Zip({{"mlp/data/aotinductor/model/k1.kernel.cpp", "// kernel"},
                      {"mlp/data/aotinductor/model/k1.kernel_metadata.json",
                       json({{"AOTI_DEVICE_KEY", "cuda"}}).dump()},
                      {"mlp/data/aotinductor/model/w1.wrapper_metadata.json", kCpuMetadata.dump()},
                      {"mlp/data/aotinductor/model/w1.wrapper.so", std::string(64, '\0')},
                      {"mlp/archive_format", "pt2"}}));
  auto facts = ReadAotiPackage(path);
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->model, "model");
  EXPECT_EQ(facts->device, "cpu");
  EXPECT_EQ(facts->machine, "x86_64");
  EXPECT_EQ(facts->platform, "linux");
  EXPECT_EQ(facts->torch_version, "2.15.0+cu132");
  EXPECT_EQ(facts->metadata, kCpuMetadata);
}

TEST_F(AotiPackageTest, APackageThatDoesNotSayItsTorchHasNone) {
  json metadata = kCpuMetadata;
  metadata.erase("torch_version");
  // An older package names its metadata <hash>_metadata.json.
  auto facts = ReadAotiPackage(
      Write("old.pt2", Zip({{"p/data/aotinductor/model/abc_metadata.json", metadata.dump()}})));
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->torch_version, "");
  EXPECT_EQ(facts->device, "cpu");
}

TEST_F(AotiPackageTest, WhatIsNoPackageIsRefusedSayingWhy) {
  struct Case {
    std::string bytes;
    std::string why;
  };
  const std::string zipped =
      Zip({{"p/data/aotinductor/model/w.wrapper_metadata.json", kCpuMetadata.dump()}});
  const std::vector<Case> cases = {
      {"not a zip at all", "it has no zip end record"},
      {"", "it has no zip end record"},
      {Zip({{"readme.txt", "hello"}}), "without an AOTInductor model"},
      {Zip({{"p/data/aotinductor/model/w.wrapper_metadata.json", "[1, 2]"}}),
       "is not a JSON object"},
      {Zip({{"p/data/aotinductor/model/w.wrapper_metadata.json",
             json({{"AOTI_MACHINE", "x86_64"}}).dump()}}),
       "names no device"},
      {Zip({{"p/data/aotinductor/model/w.wrapper_metadata.json", kCpuMetadata.dump()}},
           /*method=*/8),
       "is compressed (method 8)"},
      // Cut before its central directory ends: the end record points past the file.
      {zipped.substr(0, zipped.size() / 2) + zipped.substr(zipped.size() - 22), "outside the file"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto facts = ReadAotiPackage(Write("case" + std::to_string(i) + ".pt2", cases[i].bytes));
    ASSERT_FALSE(facts.ok()) << i;
    EXPECT_EQ(facts.status().code(), StatusCode::kInvalidArgument) << i;
    EXPECT_NE(facts.status().message().find("is not an AOTInductor package"), std::string::npos)
        << facts.status().message();
    EXPECT_NE(facts.status().message().find(cases[i].why), std::string::npos)
        << facts.status().message();
  }
  auto missing = ReadAotiPackage((dir_ / "nowhere.pt2").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().message();
}

}  // namespace
}  // namespace benchfleet
