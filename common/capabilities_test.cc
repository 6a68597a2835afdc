// The register message's capabilities both ways: what the agent writes the coordinator
// reads back unchanged, the golden example included, nulls apart from absent members;
// what a newer agent adds is kept for the store; a member of the wrong type is refused
// by its path.
#include "common/capabilities.h"

#include <gtest/gtest.h>

#include "common/golden_round_trip.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// What an agent on a GPU host sends: every member the host probe and the worker's
// --probe write, with both kinds of null.
json AgentCapabilities() {
  const json gpus = json::array({{{"index", 0}, {"name", "NVIDIA H200"}, {"memory_mb", 143771.0}},
                                 {{"index", 1}, {"name", "NVIDIA H200"}, {"memory_mb", 143771.0}}});
  return {
      {"host",
       {{"hostname", "gpu-1"},
        {"machine_id", "9a0e"},
        {"cpu_model", "Intel(R) Xeon(R) Platinum 8480+"},
        {"logical_cpus", 16},
        {"allowed_cpus", "0-15"},
        {"memory_mb", 131072},
        {"kernel", "Linux 6.8.0"},
        {"arch", "x86_64"},
        {"os", "Ubuntu 24.04 LTS"},
        {"nvidia_driver", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15"},
        {"benchfleet_version", "0.2.0"}}},
      {"torch",
       {{"torch_version", "2.11.0"},
        {"blas", "unknown"},
        {"blas_config", nullptr},
        {"blas_threading", nullptr},
        {"onednn", true},
        {"openmp", true},
        {"parallel_info", "ATen/Parallel:\n\tat::get_num_threads() : 8\n"},
        {"cuda_available", true},
        {"cuda_device_count", 2},
        {"cuda_version", "13.0"},
        {"cudnn_version", "9.10.2"},
        {"gpus", gpus},
        {"quantized_engines", {"x86", "fbgemm", "qnnpack"}}}},
      {"gpus", gpus},
      {"cpus", "0-15"},
      {"cpu_shape", {{"cpus", 16}, {"cores", 8}, {"threads_per_core", 2}, {"largest_node", 16}}}};
}

void ExpectSameFacts(const Capabilities& read, const Capabilities& written) {
  EXPECT_TRUE(read.host == written.host) << read.host.ToJson() << "\n" << written.host.ToJson();
  EXPECT_TRUE(read.torch == written.torch) << read.torch.ToJson() << "\n" << written.torch.ToJson();
  EXPECT_TRUE(read.gpus == written.gpus);
  EXPECT_EQ(read.cpus, written.cpus);
  EXPECT_EQ(read.cpu_shape, written.cpu_shape);
}

TEST(CapabilitiesTest, TheGoldenRegistersCapabilitiesReadAndWriteBackUnchanged) {
  const json golden = Golden("register").body.at("capabilities");
  auto read = Capabilities::FromJson(golden);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->ToJson(), golden);
  EXPECT_EQ(read->ToJson().dump(), golden.dump());
  EXPECT_EQ(read->raw, golden);
  EXPECT_EQ(read->host.cpu_model, "AMD EPYC 7B13");
  EXPECT_TRUE(read->host.nvidia_driver.sent);
  EXPECT_FALSE(read->host.nvidia_driver.text.has_value());
  EXPECT_EQ(read->torch.cuda_available, false);
}

TEST(CapabilitiesTest, WhatAnAgentSendsReadsBackUnchanged) {
  const json sent = AgentCapabilities();
  auto read = Capabilities::FromJson(sent);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->ToJson().dump(), sent.dump());
  EXPECT_EQ(read->host.memory_mb, 131072);
  EXPECT_EQ(read->torch.cuda_version.text, "13.0");
  ASSERT_EQ(read->gpus.size(), 2u);
  EXPECT_EQ(read->gpus[1].index, 1);
  EXPECT_EQ(read->gpus[1].memory_mb, 143771.0);
  EXPECT_EQ(read->cpu_shape, (CpuShape{16, 8, 2, 16}));

  auto again = Capabilities::FromJson(read->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ExpectSameFacts(*again, *read);
}

TEST(CapabilitiesTest, BuiltFactsReadBackAsBuilt) {
  Capabilities built;
  built.host.hostname = "node-b";
  built.host.cpu_model = "";  // no "model name" in /proc/cpuinfo
  built.host.logical_cpus = 4;
  built.host.nvidia_driver = NullableText::Of(std::nullopt);
  built.torch.torch_version = "2.11.0";
  built.torch.cuda_version = NullableText::Of(std::nullopt);
  built.torch.cudnn_version = NullableText::Of("9.10.2");
  built.torch.gpus = std::vector<GpuInfo>();
  built.torch.quantized_engines = std::vector<std::string>{"fbgemm"};
  built.gpus = {GpuInfo{0, "NVIDIA H100", std::nullopt}, GpuInfo{3, "NVIDIA H100", 81559.0}};
  built.cpus = "0-3";
  const json written = built.ToJson();
  auto read = Capabilities::FromJson(written);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameFacts(*read, built);
  EXPECT_EQ(read->ToJson(), written);

  // Null and absent stay apart: the host has no driver; the worker said nothing of cuDNN.
  EXPECT_TRUE(written["host"].contains("nvidia_driver"));
  EXPECT_TRUE(written["host"]["nvidia_driver"].is_null());
  EXPECT_FALSE(written["torch"].contains("blas_config"));
  EXPECT_FALSE(written["host"].contains("kernel"));
}

TEST(CapabilitiesTest, AnEmptyDocumentReadsAsNothingSaid) {
  auto read = Capabilities::FromJson(json::object());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameFacts(*read, Capabilities{});
  EXPECT_EQ(read->ToJson(), json({{"host", json::object()},
                                  {"torch", json::object()},
                                  {"gpus", json::array()},
                                  {"cpus", ""}}));
  // A GPU without an index is the one at its place in the list.
  auto unnumbered =
      Capabilities::FromJson(json::parse(R"({"gpus": [{"name": "A"}, {"name": "B"}]})"));
  ASSERT_TRUE(unnumbered.ok()) << unnumbered.status().ToString();
  EXPECT_EQ(unnumbered->gpus[1].index, 1);
}

// What a newer agent sends that this version does not know is stored, not read.
TEST(CapabilitiesTest, MembersThisVersionDoesNotKnowAreKeptInRaw) {
  json sent = AgentCapabilities();
  sent["host"]["numa_nodes"] = 2;
  sent["torch"]["mps_available"] = false;
  sent["network"] = {{"nic", "cx7"}};
  auto read = Capabilities::FromJson(sent);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->raw, sent);
  EXPECT_EQ(read->ToJson(), AgentCapabilities());
}

TEST(CapabilitiesTest, AMemberOfTheWrongTypeIsRefusedByItsPath) {
  struct Case {
    const char* pointer;
    json value;
    std::string error;
  };
  const std::string long_text(kMaxCapabilityText + 1, 'x');
  const std::vector<Case> cases = {
      {"/host", "x", "capabilities.host: must be an object, got \"x\""},
      {"/host/machine_id", 1, "capabilities.host.machine_id: must be a string, got 1"},
      {"/host/cpu_model", long_text, "capabilities.host.cpu_model: longer than 1024 bytes"},
      {"/host/memory_mb", -3, "capabilities.host.memory_mb: must be an integer >= 0, got -3"},
      {"/host/logical_cpus", 2.5,
       "capabilities.host.logical_cpus: must be an integer >= 0, got 2.5"},
      {"/host/nvidia_driver", false,
       "capabilities.host.nvidia_driver: must be a string, got false"},
      {"/host/benchfleet_version", json::array(),
       "capabilities.host.benchfleet_version: must be a string, got []"},
      {"/torch", json::array(), "capabilities.torch: must be an object, got []"},
      {"/torch/cuda_available", "yes",
       "capabilities.torch.cuda_available: must be true or false, got \"yes\""},
      {"/torch/cuda_device_count", -1,
       "capabilities.torch.cuda_device_count: must be an integer >= 0, got -1"},
      {"/torch/cuda_version", 13.0, "capabilities.torch.cuda_version: must be a string, got 13.0"},
      {"/torch/blas_config", long_text, "capabilities.torch.blas_config: longer than 1024 bytes"},
      {"/torch/parallel_info", std::string(kMaxParallelInfoText + 1, 'x'),
       "capabilities.torch.parallel_info: longer than 16384 bytes"},
      {"/torch/quantized_engines/1", 3,
       "capabilities.torch.quantized_engines[1]: must be a string, got 3"},
      {"/torch/gpus/0/memory_mb", -1,
       "capabilities.torch.gpus[0].memory_mb: must be a number >= 0, got -1"},
      {"/gpus", json::object(), "capabilities.gpus: must be an array, got {}"},
      {"/gpus/1", "H200", "capabilities.gpus[1]: must be an object, got \"H200\""},
      {"/gpus/0/name", 5, "capabilities.gpus[0].name: must be a string, got 5"},
      {"/gpus/0/index", -1, "capabilities.gpus[0].index: must be an integer >= 0, got -1"},
      {"/cpus", 3, "capabilities.cpus: must be a string, got 3"},
      {"/cpu_shape", 4, "capabilities.cpu_shape: must be an object, got 4"},
      {"/cpu_shape/cpus", 0, "capabilities.cpu_shape.cpus: must be an integer >= 1, got 0"},
      {"/cpu_shape/cores", 17,
       "capabilities.cpu_shape.cores: must be an integer in [1, 16], got 17"},
      {"/workers", json::object(), "capabilities.workers: must be an array, got {}"},
      {"/workers/0", "2.15", "capabilities.workers[0]: must be an object, got \"2.15\""},
      {"/torch/techniques/0", 1, "capabilities.torch.techniques[0]: must be a string, got 1"},
      {"/torch/onednn_version", 3, "capabilities.torch.onednn_version: must be a string, got 3"},
      {"", "everything", "capabilities: must be an object, got \"everything\""},
  };
  for (const Case& c : cases) {
    json sent = AgentCapabilities();
    sent[json::json_pointer(c.pointer)] = c.value;
    auto read = Capabilities::FromJson(sent);
    ASSERT_FALSE(read.ok()) << c.pointer;
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument) << c.pointer;
    EXPECT_EQ(read.status().message(), c.error) << c.pointer;
  }
  // The longest texts accepted.
  json longest = AgentCapabilities();
  longest["host"]["cpu_model"] = std::string(kMaxCapabilityText, 'x');
  longest["torch"]["parallel_info"] = std::string(kMaxParallelInfoText, 'x');
  EXPECT_TRUE(Capabilities::FromJson(longest).ok());
}

// An agent of several workers, each its own LibTorch: `torch` is the first, `workers`
// every one, and a job goes to the first whose version and techniques satisfy it.
TEST(CapabilitiesTest, AnAgentsWorkersEachSayTheirTorch) {
  json sent = AgentCapabilities();
  json wheel = {{"torch_version", "2.15.0"},  {"blas", "mkl"},
                {"blas_version", "2024.2"},   {"mkl_version", "2024.2"},
                {"onednn_version", "3.13.3"}, {"techniques", {"eager", "torchscript", "aoti"}},
                {"worker_path", "/opt/w215"}};
  json debian = {{"torch_version", "1.13.0"}, {"blas", "openblas"},
                 {"blas_version", "0.3.21"},  {"onednn_version", "2.6.3"},
                 {"techniques", {"eager"}},   {"worker_path", "/opt/w113"}};
  sent["torch"] = wheel;
  sent["workers"] = {wheel, debian};
  auto read = Capabilities::FromJson(sent);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->ToJson().dump(), sent.dump());
  ASSERT_EQ(read->Workers().size(), 2u);
  EXPECT_EQ(read->Workers()[1].blas_version.text, "0.3.21");
  EXPECT_EQ(DescribeTorchVersions(read->Workers()), "2.15.0, 1.13.0");

  WorkerNeeds needs;
  EXPECT_EQ(PickWorker(read->Workers(), needs), 0u);  // asks nothing: the first
  needs.torch = "1.13";
  EXPECT_EQ(PickWorker(read->Workers(), needs), 1u);
  needs.technique = "aoti";
  EXPECT_EQ(PickWorker(read->Workers(), needs), std::nullopt);  // 1.13 does not compile
  needs.torch = "";
  EXPECT_EQ(PickWorker(read->Workers(), needs), 0u);
  needs.torch_min = "2.16";  // a package of a newer torch
  EXPECT_EQ(PickWorker(read->Workers(), needs), std::nullopt);
  needs = {};
  needs.torch = "2.1";  // whole components: not 2.15
  EXPECT_EQ(PickWorker(read->Workers(), needs), std::nullopt);

  // An agent of one worker sends no list; its workers are its torch.
  auto single = Capabilities::FromJson(AgentCapabilities());
  ASSERT_TRUE(single.ok());
  ASSERT_EQ(single->Workers().size(), 1u);
  EXPECT_TRUE(single->Workers()[0] == single->torch);
  EXPECT_FALSE(single->ToJson().contains("workers"));
  // A worker that named no techniques runs eager only.
  needs = {};
  needs.technique = "torchscript";
  EXPECT_EQ(PickWorker(single->Workers(), needs), std::nullopt);

  json many = AgentCapabilities();
  many["workers"] = json::array();
  for (size_t i = 0; i <= kMaxAgentWorkers; ++i) many["workers"].push_back(debian);
  EXPECT_EQ(Capabilities::FromJson(many).status().message(),
            "capabilities.workers: at most 16 workers, got 17");
}

}  // namespace
}  // namespace benchfleet
