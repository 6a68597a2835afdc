#include "common/sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/model_files.h"
#include "common/test_paths.h"

namespace benchfleet {
namespace {

const char* kIssueSweep = R"({"name": "cpu-mlp",
  "select": {"device": "cpu"},
  "matrix": {"model": ["mlp"], "batch_size": [1, 16, 64], "threads": [1, 2],
             "dtype": ["fp32"], "mode": ["inference"]},
  "timing": {"warmup_s": 0.2, "min_time_s": 0.5, "max_time_s": 5, "target_ci": 0.01}})";

TEST(SweepTest, ExpandsEveryCombination) {
  auto sweep = ParseSweepText(kIssueSweep);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ(sweep->name, "cpu-mlp");
  ASSERT_EQ(sweep->combination_count, 6u);
  EXPECT_EQ(sweep->placement, Placement::kEach);
  const json first = sweep->Combinations().front().Spec();
  EXPECT_EQ(first["model"], "mlp");
  EXPECT_EQ(first["batch_size"], 1);
  EXPECT_EQ(first["threads"], 1);
  EXPECT_EQ(first["device"], "cpu");
  EXPECT_EQ(sweep->Combinations().front().device, "cpu");
  EXPECT_DOUBLE_EQ(first["timing"]["min_time_s"].get<double>(), 0.5);
  EXPECT_EQ(sweep->Combinations().back().Spec()["batch_size"], 64);
  EXPECT_EQ(sweep->Combinations().back().Spec()["threads"], 2);
}

TEST(SweepTest, APipelineInsideOneProcessRunsWhereTheWorkerSeesAGpuPerStage) {
  auto sweep = ParseSweepText(R"({"name": "p", "placement": "any",
      "matrix": {"model": "mlp", "mode": "train", "batch_size": 8, "device": "cuda",
                 "parallel": [null, {"kind": "pipeline", "stages": 3, "micro_batches": 4, "in_process": true}]},
      "models": {"mlp": {"layers": [8, 8, 8, 8]}}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  // Stage s on cuda:s: three stages need what a job on cuda:2 needs.
  EXPECT_EQ(sweep->Devices(), (std::vector<std::string>{"cuda", "cuda:2"}));
  std::vector<std::string> devices;
  for (const Combination& c : sweep->Combinations()) devices.push_back(c.device);
  EXPECT_EQ(devices, sweep->Devices());
  // The job itself still says "cuda": the worker places the stages.
  EXPECT_EQ(sweep->Combinations()[1].Spec()["device"], "cuda");
}

TEST(SweepTest, ASliceOfTheCombinationsIsTheSameWhereverItStarts) {
  auto sweep = ParseSweepText(R"({"name": "s", "matrix": {"model": ["mlp", "transformer"],
      "batch_size": [1, 2, 3], "threads": [1, 2], "device": ["cpu", "cuda"]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  const std::vector<Combination> all = sweep->Combinations();
  ASSERT_EQ(all.size(), 24u);
  for (size_t first : {0u, 1u, 5u, 11u, 23u}) {
    std::vector<std::string> slice;
    ASSERT_TRUE(sweep
                    ->ForEachCombination(first, 7,
                                         [&](const Combination& c) {
                                           slice.push_back(c.spec);
                                           return Status::Ok();
                                         })
                    .ok());
    ASSERT_EQ(slice.size(), std::min<size_t>(7, 24 - first)) << first;
    for (size_t i = 0; i < slice.size(); ++i) EXPECT_EQ(slice[i], all[first + i].spec) << first + i;
  }
  // Past the end: nothing.
  int calls = 0;
  ASSERT_TRUE(sweep
                  ->ForEachCombination(24, 5,
                                       [&](const Combination&) {
                                         ++calls;
                                         return Status::Ok();
                                       })
                  .ok());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(sweep->Devices(), (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(SweepTest, ShapeFirstThenTheCombinationsASliceAtATime) {
  // Each value is fine alone; matmul in int8 (combinations 6 and 7) is not.
  const json document = json::parse(R"({"name": "s", "placement": "any",
      "matrix": {"model": ["mlp", "matmul"], "dtype": ["fp32", "int8"], "batch_size": [1, 2]}})");
  auto shape = ParseSweepShape(document);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->combination_count, 8u);
  EXPECT_TRUE(shape->CheckCombinations(0, 6).ok());
  Status bad = shape->CheckCombinations(6, 2);
  EXPECT_EQ(
      bad.message(),
      "matrix.dtype[1]: int8 dynamic quantization needs Linear layers; model matmul has none");
  EXPECT_EQ(ParseSweep(document).status().message(), bad.message());
  // What the shape alone refuses: a value no combination could take.
  EXPECT_FALSE(
      ParseSweepShape(json::parse(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": -1}})"))
          .ok());
}

TEST(SweepTest, DefaultsApplyAndModelArgsTravelWithTheJob) {
  auto sweep = ParseSweepText(
      R"({"name":"x","placement":"any","matrix":{"model":"mlp","batch_size":[8]},
          "models":{"mlp":{"layers":[32,16,4]}},"seed":7})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 1u);
  const json job = sweep->Combinations()[0].Spec();
  EXPECT_EQ(job["threads"], 1);
  EXPECT_EQ(job["dtype"], "fp32");
  EXPECT_EQ(job["mode"], "inference");
  EXPECT_EQ(job["seed"], 7);
  EXPECT_EQ(job["model_args"]["layers"], json::parse("[32,16,4]"));
  EXPECT_EQ(sweep->placement, Placement::kAny);
  EXPECT_GT(JobTimeoutSeconds(*sweep), 5.0);
}

struct BadSweep {
  std::string text;
  std::string expected_words;
};

TEST(SweepTest, BadInputNamesTheField) {
  const std::vector<BadSweep> cases = {
      {"{not json", "not valid JSON"},
      {R"({"name":"x","seed":3.6E666666662,"matrix":{"model":["mlp"],"batch_size":[1]}})",
       "not valid JSON"},  // a number too large for a double must not throw
      {"[]", "JSON object"},
      {R"({"matrix":{"model":["mlp"],"batch_size":[1]}})", "name"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"colour":"red"})",
       "unknown key \"colour\""},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1, -4]}})", "matrix.batch_size[1]"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[0]}})", "matrix.batch_size[0]"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1.5]}})", "matrix.batch_size[0]"},
      {R"({"name":"x","matrix":{"model":["resnet9000"],"batch_size":[1]}})",
       "unknown model \"resnet9000\""},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"threads":[]}})",
       "matrix.threads: must not be empty"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"speed":[1]}})",
       "matrix: unknown key \"speed\""},
      {R"({"name":"x","matrix":{"model":["mlp"]}})", "matrix.batch_size: required"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"dtype":["fp64"]}})",
       "unknown dtype"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"device":["tpu"]}})",
       "unknown device"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"timing":{"min_time_s":-1}})",
       "timing.min_time_s"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"timing":{"min_time_s":9,"max_time_s":1}})",
       "timing.min_time_s (9.0) must not exceed"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"select":{"device":"fpga"}})",
       "select.device"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"placement":"all"})",
       "placement"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"models":{"mlp":{"layers":[4]}}})",
       "models.mlp.layers"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"models":{"mlp":{"layers":[4,-1]}}})",
       "models.mlp.layers[1]"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"timeout_s":0})", "timeout_s"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto sweep = ParseSweepText(c.text);
    ASSERT_FALSE(sweep.ok());
    EXPECT_EQ(sweep.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(sweep.status().message().find(c.expected_words), std::string::npos)
        << sweep.status().message();
  }
}

TEST(SweepTest, ModelArgumentsCanBeAxes) {
  auto sweep = ParseSweepText(
      R"({"name": "s", "matrix": {"model": ["mlp", "transformer"], "batch_size": [1, 8]},
    "models": {"transformer": {"hidden": 64, "heads": 4, "seq_len": [128, 512]},
               "mlp": {"layers": [[64, 10], [128, 64, 10]]}}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  // Each model once per value of its argument axis: (2 + 2) x 2 batch sizes.
  ASSERT_EQ(sweep->combination_count, 8u);
  std::vector<json> args;
  for (const Combination& c : sweep->Combinations()) args.push_back(c.Spec()["model_args"]);
  EXPECT_EQ(args[0], json::parse(R"({"layers": [64, 10]})"));
  EXPECT_EQ(args[2], json::parse(R"({"layers": [128, 64, 10]})"));
  EXPECT_EQ(args[4], json::parse(R"({"hidden": 64, "heads": 4, "seq_len": 128})"));
  EXPECT_EQ(args[7], json::parse(R"({"hidden": 64, "heads": 4, "seq_len": 512})"));
  // A list argument written once is one value, not an axis.
  auto one = ParseSweepText(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 1},
    "models": {"mlp": {"layers": [64, 64, 10]}}})");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->combination_count, 1u);
  // A bad value of an axis is named by its place in it.
  auto bad = ParseSweepText(R"({"name": "s", "matrix": {"model": "transformer", "batch_size": 1},
    "models": {"transformer": {"seq_len": [16, 0]}}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("models.transformer.seq_len[1]: ", 0), 0u)
      << bad.status().message();
  auto empty = ParseSweepText(R"({"name": "s", "matrix": {"model": "transformer", "batch_size": 1},
    "models": {"transformer": {"seq_len": []}}})");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "models.transformer.seq_len: an axis must not be empty");
  // An objection to a later axis still names the matrix' own model index.
  auto later = ParseSweepText(
      R"({"name": "s", "matrix": {"model": ["transformer", "matmul"], "batch_size": 1,
    "dtype": ["fp32", "int8"]}, "models": {"transformer": {"seq_len": [16, 32]}}})");
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.status().message().rfind("matrix.dtype[1]: ", 0), 0u) << later.status().message();
}

TEST(SweepTest, ExcludeAndSkipLeaveCombinationsOutAndCountThem) {
  const char* text = R"({"name": "mix", "placement": "any",
    "matrix": {"model": ["mlp", "matmul"], "mode": ["inference", "train"], "dtype": ["fp32", "int8"],
               "batch_size": [1, 8]},
    "exclude": [{"model": "mlp", "batch_size": 8}],
    "invalid": "skip"})";
  auto sweep = ParseSweepText(text);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ(sweep->combination_count, 16u);
  // mlp at batch 8: 4 excluded. Refused: int8 in train (mlp 1, matmul 2) and matmul's
  // int8 inference (2): 5. Kept: mlp 3 (fp32 x2 modes, int8 inference) + matmul 4 fp32.
  EXPECT_EQ(sweep->checked.excluded, 4u);
  EXPECT_EQ(sweep->checked.invalid, 5u);
  EXPECT_EQ(sweep->checked.Kept(), 7u);
  EXPECT_EQ(sweep->checked.kept.at("cpu"), 7u);
  ASSERT_EQ(sweep->checked.invalid_listed.size(), 5u);
  EXPECT_EQ(sweep->checked.invalid_listed[0]["job"]["model"], "mlp");
  EXPECT_EQ(
      sweep->checked.invalid_listed[0]["reason"].get<std::string>().rfind("matrix.dtype[1]: ", 0),
      0u);
  const std::vector<Combination> jobs = sweep->Combinations();
  ASSERT_EQ(jobs.size(), 7u);
  for (const Combination& c : jobs) {
    const json spec = c.Spec();
    EXPECT_FALSE(spec["model"] == "mlp" && spec["batch_size"] == 8) << c.spec;
    EXPECT_FALSE(spec["dtype"] == "int8" && (spec["mode"] == "train" || spec["model"] == "matmul"))
        << c.spec;
  }
  // A slice of the matrix keeps the same combinations as the whole.
  std::vector<std::string> sliced;
  for (size_t first = 0; first < 16; first += 5) {
    ASSERT_TRUE(sweep
                    ->ForEachCombination(first, 5,
                                         [&](const Combination& c) {
                                           sliced.push_back(c.spec);
                                           return Status::Ok();
                                         })
                    .ok());
  }
  ASSERT_EQ(sliced.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(sliced[i], jobs[i].spec);
  // Without "invalid": "skip" the first refusal refuses the sweep; leaving everything out is an
  // error.
  json refuse = json::parse(text);
  refuse.erase("invalid");
  EXPECT_FALSE(ParseSweep(refuse).ok());
  json nothing = json::parse(text);
  nothing["exclude"] = json::array({{{"model", "mlp"}}, {{"model", "matmul"}}});
  auto none = ParseSweep(nothing);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(
      none.status().message().rfind("every combination of the matrix is left out: 16 excluded", 0),
      0u)
      << none.status().message();
  json bad = json::parse(text);
  bad["exclude"] = json::array({{{"modle", "mlp"}}});
  EXPECT_EQ(ParseSweep(bad).status().message().rfind("exclude[0]: unknown key \"modle\"", 0), 0u);
  bad["exclude"] = json::array({json::object()});
  EXPECT_EQ(ParseSweep(bad).status().message().rfind("exclude[0]: must be a non-empty object", 0),
            0u);
  json odd = json::parse(text);
  odd["invalid"] = "ignore";
  EXPECT_EQ(ParseSweep(odd).status().message(),
            "invalid: must be \"refuse\" (the default) or \"skip\", got \"ignore\"");
}

TEST(SweepTest, LabelsAreShortStrings) {
  json sweep = json::parse(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 1},
                               "labels": {"commit": "abc123", "team": "infra"}})");
  auto parsed = ParseSweep(sweep);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->labels["commit"], "abc123");
  EXPECT_EQ(parsed->source["labels"]["team"], "infra");  // stored with the sweep
  for (const char* bad :
       {R"({"commit": 5})", R"({"bad key": "x"})", R"({"": "x"})", R"(["commit=abc"])"}) {
    sweep["labels"] = json::parse(bad);
    EXPECT_FALSE(ParseSweep(sweep).ok()) << bad;
  }
  sweep["labels"] = {{"long", std::string(257, 'x')}};
  EXPECT_EQ(ParseSweep(sweep).status().message(),
            "labels.long: must be a string of at most 256 characters");
}

// The torch and technique axes turn fastest: one configuration's versions (and
// techniques) run one after another, interleaved on a host; each is a placement of its own.
TEST(SweepTest, TorchAndTechniqueAreTheInnermostAxesAndPlaceTheirJobs) {
  auto sweep = ParseSweepText(R"({"name": "upgrade", "placement": "any",
      "matrix": {"model": "mlp", "batch_size": [1, 8], "technique": ["eager", "aoti"], "torch": ["2.15", "1.13"]},
      "exclude": [{"technique": "aoti", "torch": "1.13"}]})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  std::vector<std::string> order;
  for (const Combination& c : sweep->Combinations()) {
    const json spec = c.Spec();
    order.push_back(std::to_string(spec["batch_size"].get<int>()) + " " +
                    spec.value("technique", "-") + " " + spec.value("torch", "-"));
    EXPECT_EQ(c.placement,
              c.needs.worker.technique.empty()
                  ? "cpu [torch " + spec["torch"].get<std::string>() + "]"
                  : "cpu [torch " + spec["torch"].get<std::string>() + ", technique aoti]");
  }
  // (eager is what a job without the key runs: left out.)
  EXPECT_EQ(order, (std::vector<std::string>{"1 - 2.15", "1 - 1.13", "1 aoti 2.15", "8 - 2.15",
                                             "8 - 1.13", "8 aoti 2.15"}));
  std::vector<std::string> keys;
  for (const JobPlacement& p : sweep->Placements()) keys.push_back(p.Key());
  EXPECT_EQ(keys, (std::vector<std::string>{"cpu [torch 1.13]", "cpu [torch 2.15, technique aoti]",
                                            "cpu [torch 2.15]"}));
  // A sweep without the axes keeps its jobs' specs, and so their series.
  auto plain = ParseSweepText(R"({"name": "p", "matrix": {"model": "mlp", "batch_size": 1}})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->Combinations()[0].Spec().contains("torch"));
  EXPECT_FALSE(plain->Combinations()[0].Spec().contains("technique"));
  EXPECT_EQ(plain->Combinations()[0].placement, "cpu");
  // Refused by the job rules, named by the axis.
  auto bad = ParseSweepText(
      R"({"name": "b", "matrix": {"model": "mlp", "batch_size": 1, "torch": ["2.15", "x"]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("matrix.torch[1]: torch must be"), std::string::npos)
      << bad.status().message();
}

// What the coordinator read of a package: its device is the job's, its torch a need.
TEST(SweepTest, APackagesDeviceAndTorchComeWithItsJobs) {
  const std::string sha = std::string(64, 'c');
  auto sweep = ParseSweepShape(json::parse(R"({"name": "pkg", "placement": "any",
      "matrix": {"model": "aoti", "batch_size": 4, "device": ["cpu", "cuda"]},
      "models": {"aoti": {"sha256": ")" + sha +
                                           R"(", "inputs": [[16]]}}})"));
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  sweep->packages[sha] = {"cpu", "2.15.0+cu132"};
  const Status checked = sweep->CheckCombinations(0, sweep->combination_count);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.message().find("matrix.device[1]: the AOTInductor package " + sha +
                                   " was compiled for cpu, not for device cuda"),
            std::string::npos)
      << checked.message();
  sweep->skip_invalid = true;
  sweep->checked = {};
  ASSERT_TRUE(sweep->CheckCombinations(0, sweep->combination_count).ok());
  EXPECT_EQ(sweep->checked.invalid, 1u);
  const std::vector<Combination> jobs = sweep->Combinations();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].needs.worker.torch_min, "2.15.0+cu132");
  EXPECT_EQ(jobs[0].needs.worker.technique, "aoti");
}

// Every example sweep is one the coordinator takes (its files named beside it, as
// `benchfleet submit` resolves them).
TEST(SweepTest, EveryExampleSweepParses) {
  const std::filesystem::path examples = std::filesystem::path(test_paths::kSourceDir) / "examples";
  size_t parsed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto document = ParseSweepJson(text.str());
    ASSERT_TRUE(document.ok()) << entry.path() << ": " << document.status().message();
    ResolveModelPaths(&*document, examples.string());
    auto sweep = ParseSweep(*document);
    EXPECT_TRUE(sweep.ok()) << entry.path() << ": " << sweep.status().message();
    ++parsed;
  }
  EXPECT_GE(parsed, 15u);
}

// versus: each combination a pair of jobs, side A's spec at the first value and side B's
// at the second, each what a sweep of that value alone would give it (no processes).
TEST(SweepTest, AVersusMakesEachCombinationAPairOfSides) {
  auto sweep = ParseSweep(json::parse(R"({
      "name": "pairs", "matrix": {"model": "mlp", "batch_size": [1, 16]},
      "versus": {"technique": ["eager", "torchscript"], "max_pairs": 8}})"));
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  EXPECT_EQ(sweep->JobsPerCombination(), 2u);
  EXPECT_EQ(sweep->checked.Kept(), 4u) << "two combinations, two jobs each";
  const std::vector<Combination> pairs = sweep->Combinations();
  ASSERT_EQ(pairs.size(), 2u);
  for (const Combination& pair : pairs) {
    const json a = pair.Spec();
    const json b = json::parse(pair.versus_b_spec);
    EXPECT_FALSE(a.contains("technique")) << "eager leaves the key out, as the matrix does";
    EXPECT_EQ(b["technique"], "torchscript");
    EXPECT_FALSE(a.contains("processes"));
    EXPECT_FALSE(b.contains("processes"));
    EXPECT_EQ(pair.versus["axis"], "technique");
    EXPECT_EQ(pair.versus["pairing"], "in_process") << "auto: a technique shares a process";
    EXPECT_EQ(pair.versus["max_pairs"], 8);
    EXPECT_EQ(pair.versus_b_needs.worker.technique, "torchscript");
    EXPECT_NE(pair.placement.find("versus [technique torchscript]"), std::string::npos)
        << pair.placement;
  }
  // A worker setting, and a model's argument.
  auto slowed = ParseSweep(json::parse(R"({
      "name": "slowed", "matrix": {"model": "mlp", "batch_size": 1},
      "versus": {"slowdown": [0, 0.05], "pairing": "interleaved"}})"));
  ASSERT_TRUE(slowed.ok()) << slowed.status().message();
  const Combination one = slowed->Combinations().at(0);
  EXPECT_FALSE(one.Spec().contains("slowdown"));
  EXPECT_EQ(json::parse(one.versus_b_spec)["slowdown"], 0.05);
  EXPECT_EQ(one.versus["pairing"], "interleaved");
  auto layers = ParseSweep(json::parse(R"({
      "name": "layers", "matrix": {"model": "mlp", "batch_size": 1},
      "versus": {"models.mlp.layers": [[64, 10], [128, 10]]}})"));
  ASSERT_TRUE(layers.ok()) << layers.status().message();
  const Combination widths = layers->Combinations().at(0);
  EXPECT_EQ(widths.Spec()["model_args"]["layers"], json::parse("[64, 10]"));
  EXPECT_EQ(json::parse(widths.versus_b_spec)["model_args"]["layers"], json::parse("[128, 10]"));
  // The torch axis pairs fresh processes, and a duet takes twice the threads' CPUs.
  auto torch = ParseSweep(json::parse(R"({
      "name": "torch", "matrix": {"model": "mlp", "batch_size": 1, "threads": 2},
      "versus": {"torch": ["1.13", "2.15"], "pairing": "duet"}})"));
  ASSERT_TRUE(torch.ok()) << torch.status().message();
  EXPECT_EQ(torch->Combinations().at(0).versus_cpus, 4);
  auto torch_auto = ParseSweep(json::parse(R"({
      "name": "torch", "matrix": {"model": "mlp", "batch_size": 1},
      "versus": {"torch": ["1.13", "2.15"]}})"));
  ASSERT_TRUE(torch_auto.ok());
  EXPECT_EQ(torch_auto->Combinations().at(0).versus["pairing"], "interleaved");
}

TEST(SweepTest, AVersusThatCannotBeIsRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"colour": [1, 2]})", "versus: \"colour\" is no axis"},
      {R"({"dtype": ["fp32"]})", "versus.dtype: must be an array of exactly two"},
      {R"({"dtype": ["fp32", "bf16"], "torch": ["1.13", "2.15"]})", "exactly one axis"},
      {R"({"dtype": ["fp32", "fp16"]})", "versus.dtype[1]"},
      {R"({"slowdown": [0, 2]})", "versus.slowdown[1]"},
      {R"({"batch_size": [1, 2]})", "matrix.batch_size: named by versus too"},
      {R"({"torch": ["1.13", "2.15"], "pairing": "in_process"})", "versus.pairing: in_process"},
      {R"({"dtype": ["fp32", "bf16"], "pairing": "sometimes"})", "versus.pairing: must be one of"},
      {R"({"dtype": ["fp32", "bf16"], "max_pairs": 51})", "versus.max_pairs"},
      {R"({"dtype": ["fp32", "bf16"], "min_change": -0.1})", "versus.min_change"},
      {R"({"models.cnn.width": [16, 32]})", "versus.models.cnn.width"},
      {R"({"models.mlp.depth": [1, 2]})", "mlp has no argument \"depth\""},
      {R"({"parallel": [null, {"kind": "data", "world_size": 2}]})", "versus.parallel"},
  };
  for (const auto& [versus, words] : cases) {
    json document = json::parse(R"({"name": "v", "matrix": {"model": "mlp", "batch_size": 1}})");
    document["versus"] = json::parse(versus);
    auto sweep = ParseSweep(document);
    ASSERT_FALSE(sweep.ok()) << versus;
    EXPECT_NE(sweep.status().message().find(words), std::string::npos)
        << versus << ": " << sweep.status().message();
  }
  // With what runs more than one process per job, and with processes.
  for (const auto& [extra, words] : std::vector<std::pair<std::string, std::string>>{
           {R"({"matrix": {"model": "allreduce", "batch_size": 1,
                           "parallel": {"kind": "collective", "world_size": 2}}})",
            "versus: a gang"},
           {R"({"matrix": {"model": "mlp", "batch_size": 1, "replicas": 2}})", "versus: replicas"},
           {R"({"search": {"max_batch": {"memory_mb": 64}}})", "versus: a batch search"},
           {R"({"processes": 3})", "processes: a sweep with versus"}}) {
    json document = json::parse(R"({"name": "v", "matrix": {"model": "mlp", "batch_size": 1},
                                    "versus": {"dtype": ["fp32", "bf16"]}})");
    document.update(json::parse(extra));
    auto sweep = ParseSweep(document);
    ASSERT_FALSE(sweep.ok()) << extra;
    EXPECT_NE(sweep.status().message().find(words), std::string::npos)
        << extra << ": " << sweep.status().message();
  }
  // A slowdown: a number in [0, 1], not in the matrix.
  auto bad = ParseSweep(json::parse(R"({"name": "s", "slowdown": 1.5,
                                       "matrix": {"model": "mlp", "batch_size": 1}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("slowdown: must be a number in [0, 1]"), std::string::npos);
}

}  // namespace
}  // namespace benchfleet
