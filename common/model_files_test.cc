#include "common/model_files.h"

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "common/sweep.h"

namespace benchfleet {
namespace {

using nlohmann::json;

const std::string kA = Sha256Hex("a");
const std::string kB = Sha256Hex("b");

json TwoModelsAndATeacher() {
  return json::parse(R"({
    "name": "ts", "matrix": {"model": "torchscript", "batch_size": 4,
      "reference": [null, {"model": "torchscript", "model_args": {"path": "teacher.pt"}}]},
    "models": {"torchscript": {"path": ["/m/a.pt", "b.pt"], "inputs": [[8]]}},
    "exclude": [{"reference": {"model": "torchscript", "model_args": {"path": "teacher.pt"}}, "batch_size": 4}]})");
}

TEST(ModelFilesTest, FindsEveryFileASweepNames) {
  const auto refs = FindModelFiles(TwoModelsAndATeacher());
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[0].field, "models.torchscript.path[0]");
  EXPECT_EQ(refs[0].value, "/m/a.pt");
  EXPECT_EQ(refs[1].field, "models.torchscript.path[1]");
  EXPECT_EQ(refs[2].field, "matrix.reference[1].model_args.path");
  EXPECT_EQ(refs[3].field, "exclude[0].reference.model_args.path");
  for (const auto& ref : refs) EXPECT_EQ(ref.key, "path");
}

TEST(ModelFilesTest, RelativePathsAreBesideTheSweepFile) {
  json sweep = TwoModelsAndATeacher();
  ResolveModelPaths(&sweep, "/sweeps/nightly");
  EXPECT_EQ(sweep["models"]["torchscript"]["path"], json({"/m/a.pt", "/sweeps/nightly/b.pt"}));
  EXPECT_EQ(sweep["matrix"]["reference"][1]["model_args"]["path"], "/sweeps/nightly/teacher.pt");
}

TEST(ModelFilesTest, PathsBecomeHashesAndTheSweepStillParses) {
  json sweep = TwoModelsAndATeacher();
  ResolveModelPaths(&sweep, "/s");
  ASSERT_TRUE(ParseSweep(sweep).ok());
  ASSERT_TRUE(
      NameModelsByContent(&sweep, {{"/m/a.pt", kA}, {"/s/b.pt", kB}, {"/s/teacher.pt", kA}}).ok());
  EXPECT_FALSE(sweep["models"]["torchscript"].contains("path"));
  EXPECT_EQ(sweep["models"]["torchscript"]["sha256"], json({kA, kB}));
  EXPECT_EQ(sweep["matrix"]["reference"][1]["model_args"], json({{"sha256", kA}}));
  // The exclude entry still matches the matrix' value it was written against.
  EXPECT_EQ(sweep["exclude"][0]["reference"], sweep["matrix"]["reference"][1]);
  auto parsed = ParseSweep(sweep);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->combination_count, 4u);
  // A path nobody hashed is an error, not a silent skip.
  json other = TwoModelsAndATeacher();
  EXPECT_FALSE(NameModelsByContent(&other, {{"/m/a.pt", kA}}).ok());
}

TEST(ModelFilesTest, TheCoordinatorRefusesPathsAndUnknownContent) {
  json sweep = TwoModelsAndATeacher();
  Status refused = CheckSubmittedModels(sweep, [](const std::string&) { return true; });
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("models.torchscript.path[0]"), std::string::npos);
  ASSERT_TRUE(
      NameModelsByContent(&sweep, {{"/m/a.pt", kA}, {"b.pt", kB}, {"teacher.pt", kA}}).ok());
  EXPECT_TRUE(CheckSubmittedModels(sweep, [](const std::string&) { return true; }).ok());
  Status unknown =
      CheckSubmittedModels(sweep, [&](const std::string& sha256) { return sha256 == kA; });
  EXPECT_EQ(unknown.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(unknown.message().find("models.torchscript.sha256[1]"), std::string::npos);
  json local = json::parse(R"({"name": "l", "matrix": {"model": "torchscript", "batch_size": 1},
    "models": {"torchscript": {"agent_path": "/srv/models/m.pt", "inputs": [[8]]}}})");
  EXPECT_TRUE(CheckSubmittedModels(local, [](const std::string&) { return false; }).ok());
  EXPECT_TRUE(ParseSweep(local).ok());
}

}  // namespace
}  // namespace benchfleet
