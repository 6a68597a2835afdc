#include "worker/models/compiled_model.h"

#include <c10/util/hash.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/files.h"
#include "worker/models/aoti_model.h"
#include "worker/models/cuda_graph.h"
#include "worker/models/workload.h"

#ifndef BENCHFLEET_TORCH_PYTHON
#define BENCHFLEET_TORCH_PYTHON ""
#endif
#ifndef BENCHFLEET_PYTHON_TOOLS_DIR
#define BENCHFLEET_PYTHON_TOOLS_DIR ""
#endif

namespace benchfleet::worker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kCompiler = "compile_model.py";
constexpr const char* kZoo = "benchfleet_zoo.py";
// The lines of the compiler's stderr a failure quotes (its last say why).
constexpr std::size_t kErrorTailBytes = 1500;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// The python of the torch this worker was built against (CMake's BENCHFLEET_TORCH_PYTHON,
// the venv of deploy/torch.env); empty when there is none.
std::string TorchPython() {
  const std::string python = BENCHFLEET_TORCH_PYTHON;
  return !python.empty() && access(python.c_str(), X_OK) == 0 ? python : std::string();
}

// Where compile_model.py is: beside an installed worker (<prefix>/share/benchfleet/python),
// else in the source tree it was built from.
std::string ToolsDir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec)
    candidates.push_back(self.parent_path().parent_path() / "share" / "benchfleet" / "python");
  candidates.emplace_back(BENCHFLEET_PYTHON_TOOLS_DIR);
  for (const fs::path& dir : candidates) {
    if (!dir.empty() && fs::exists(dir / kCompiler, ec) && fs::exists(dir / kZoo, ec))
      return dir.string();
  }
  return "";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// $BENCHFLEET_PACKAGE_CACHE (the agent's STATE_DIR/packages), else the user's cache.
fs::path CacheDir() {
  if (const char* dir = std::getenv(kPackageCacheVariable); dir != nullptr && *dir != '\0')
    return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "benchfleet" / "packages";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : "/tmp") / ".cache" / "benchfleet" /
         "packages";
}

// The model_args the zoo model was built with, whole (the compiler builds the same).
json ZooArgs(const JobSpec& spec) {
  if (spec.model == "matmul")
    return {{"m", spec.matmul.m}, {"k", spec.matmul.k}, {"n", spec.matmul.n}};
  if (spec.model == "mlp") return {{"layers", spec.mlp.layers}};
  if (spec.model == "cnn") {
    const CnnArgs& c = spec.cnn;
    return {{"width", c.width},       {"blocks", c.blocks},   {"image_size", c.image_size},
            {"channels", c.channels}, {"classes", c.classes}, {"memory_format", c.memory_format}};
  }
  const TransformerArgs& t = spec.transformer;
  return {{"hidden", t.hidden},
          {"heads", t.heads},
          {"layers", t.layers},
          {"ffn", t.ffn},
          {"seq_len", t.seq_len}};
}

// The model's parameters and buffers (BatchNorm's statistics), by their module paths: what
// the compiler loads with strict=True. Raw little-endian bytes one after another, and a
// JSON manifest of each tensor's name, dtype, shape and offset: no pickle, so any torch
// reads it (weights_only loading refuses LibTorch's pickled dicts).
struct SavedState {
  std::string bytes;
  json manifest = json::array();
};

SavedState SaveState(Model& eager) {
  torch::nn::Module* root = eager.Root();
  if (root == nullptr) throw WorkloadError("technique: only a zoo model can be compiled");
  SavedState saved;
  auto add = [&](const std::string& name, const torch::Tensor& value) {
    const torch::Tensor t = value.detach().to(torch::kCPU).contiguous();
    const std::string dtype = t.scalar_type() == torch::kFloat      ? "float32"
                              : t.scalar_type() == torch::kBFloat16 ? "bfloat16"
                              : t.scalar_type() == torch::kLong     ? "int64"
                                                                    : "";
    if (dtype.empty()) {
      throw WorkloadError("technique: tensor " + name +
                          " is of a dtype the compiler does not read (" +
                          std::string(c10::toString(t.scalar_type())) + ")");
    }
    const auto size = static_cast<std::size_t>(t.numel()) * t.element_size();
    saved.manifest.push_back({{"name", name},
                              {"dtype", dtype},
                              {"shape", t.sizes().vec()},
                              {"offset", saved.bytes.size()},
                              {"bytes", size}});
    saved.bytes.append(static_cast<const char*>(t.data_ptr()), size);
  };
  for (const auto& item : root->named_parameters(/*recurse=*/true)) add(item.key(), item.value());
  for (const auto& item : root->named_buffers(/*recurse=*/true)) add(item.key(), item.value());
  return saved;
}

// Runs argv with stdout and stderr into files; returns its wait status.
int Run(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
        const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) {
    if (out >= 0) close(out);
    if (err >= 0) close(err);
    throw WorkloadError("technique: cannot write the compiler's output under " +
                        fs::path(out_path).parent_path().string());
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out);
  close(err);
  if (pid < 0) throw WorkloadError("technique: cannot start the compiler (fork failed)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string LastLine(const std::string& text) {
  std::string tail =
      text.size() > kErrorTailBytes ? text.substr(text.size() - kErrorTailBytes) : text;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  const std::size_t newline = tail.rfind('\n');
  return newline == std::string::npos ? tail : tail.substr(newline + 1);
}

// Removes the least recently used compiled files (and their reports) while the cache
// holds more than kMaxPackageCacheBytes, never `keep` (the one just made). Inductor's own
// cache below it (inductor/) is Inductor's to manage.
void PruneCache(const fs::path& cache, const fs::path& keep) {
  std::error_code ec;
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uintmax_t bytes;
  };
  std::vector<Entry> entries;
  std::uintmax_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(cache, ec)) {
    const std::string extension = e.path().extension().string();
    if (!e.is_regular_file(ec) || (extension != ".pt2" && extension != ".pt")) continue;
    const std::uintmax_t bytes = e.file_size(ec);
    entries.push_back({e.path(), e.last_write_time(ec), bytes});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= kMaxPackageCacheBytes) break;
    if (e.path == keep) continue;
    fs::remove(e.path, ec);
    fs::path report = e.path;
    fs::remove(report.replace_extension(".json"), ec);
    total -= e.bytes;
  }
}

}  // namespace

std::vector<std::string> SupportedTechniques() {
  std::vector<std::string> techniques = {"eager"};
  if (!TorchPython().empty() && !ToolsDir().empty()) {
    techniques.push_back("torchscript");
    if (AotiSupported()) techniques.push_back("aoti");
  }
  if (CudaGraphSupported()) techniques.push_back("cuda_graph");
  return techniques;
}

CompiledModel CompileZooModel(const JobSpec& spec, Model& eager) {
  const std::string& technique = spec.technique;
  const std::string python = TorchPython();
  const std::string tools = ToolsDir();
  if (python.empty() || tools.empty()) {
    throw WorkloadError(
        "technique " + json(technique).dump() + ": this worker (LibTorch " + TORCH_VERSION +
        ") has no python of its torch to compile with" +
        (python.empty() ? std::string(" (built without BENCHFLEET_TORCH_PYTHON, or ") +
                              BENCHFLEET_TORCH_PYTHON + " is gone)"
                        : " (compile_model.py is not installed beside it)") +
        "; run the job on a worker built against the torch wheel (the sweep's torch axis)");
  }
  if (technique == "aoti" && !AotiSupported()) {
    throw WorkloadError("technique \"aoti\": this worker's LibTorch (" +
                        std::string(TORCH_VERSION) +
                        ") has no AOTInductor package loader (LibTorch 2.6 or newer has)");
  }
  // What the compiled file is made of: the same weights, model, dtype, device, torch
  // and compiler make the same file, found by this name.
  const SavedState state = SaveState(eager);
  // The threads too: Inductor writes its own kernels for the thread count it compiles
  // under (serial ones for one thread, OpenMP regions for more).
  const json job = {{"model", spec.model},           {"model_args", ZooArgs(spec)},
                    {"batch_size", spec.batch_size}, {"dtype", spec.dtype},
                    {"device", spec.device},         {"seed", spec.seed},
                    {"threads", spec.threads},       {"technique", technique}};
  c10::sha1 hash(state.bytes + "\n" + state.manifest.dump() + "\n" + job.dump() + "\n" +
                 TORCH_VERSION + "\n" + ReadAll(tools + "/" + kCompiler) +
                 ReadAll(tools + "/" + kZoo));
  const std::string key = hash.str();
  const fs::path cache = CacheDir();
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec)
    throw WorkloadError("technique: cannot make the package cache " + cache.string() + ": " +
                        ec.message());
  const std::string extension = technique == "aoti" ? ".pt2" : ".pt";
  const fs::path file = cache / (key + extension);
  const fs::path report_path = cache / (key + ".json");

  CompiledModel compiled;
  json report = json::parse(ReadAll(report_path.string()), nullptr, false);
  const bool cached = report.is_object() && fs::exists(file, ec);
  if (!cached) {
    // Made under names of this process's own, then renamed into place: a job killed
    // meanwhile, or another agent's worker compiling the same, leaves nothing half-made.
    const std::string mine = key + "." + std::to_string(getpid());
    const fs::path weights = cache / (mine + ".weights.bin");
    const fs::path manifest = cache / (mine + ".weights.json");
    const fs::path job_path = cache / (mine + ".job.json");
    const fs::path partial = cache / (mine + ".partial" + extension);
    const fs::path out_log = cache / (mine + ".out"), err_log = cache / (mine + ".err");
    auto clean = [&] {
      for (const fs::path& p : {weights, manifest, job_path, partial, out_log, err_log})
        fs::remove(p, ec);
    };
    {
      std::ofstream out(weights, std::ios::binary);
      out.write(state.bytes.data(), static_cast<std::streamsize>(state.bytes.size()));
      std::ofstream(manifest) << state.manifest.dump();
      std::ofstream(job_path) << job.dump();
      if (!out) {
        clean();
        throw WorkloadError("technique: cannot write the model's weights to " + weights.string());
      }
    }
    // Inductor's own cache beside the packages: it survives the job, and nothing of it
    // lands in a shared /tmp.
    std::vector<std::string> env = {"TORCHINDUCTOR_CACHE_DIR=" + (cache / "inductor").string()};
    const auto started = SteadyClock::now();
    const int status =
        Run({python, tools + "/" + kCompiler, "--job", job_path.string(), "--weights",
             manifest.string(), "--technique", technique, "--out", partial.string()},
            env, out_log.string(), err_log.string());
    const double wall_s = SecondsSince(started);
    const std::string out_text = ReadAll(out_log.string());
    const std::string err_text = ReadAll(err_log.string());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      clean();
      throw WorkloadError("technique " + json(technique).dump() + ": compiling the model with " +
                          python + " failed (" +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : "signal " + std::to_string(WTERMSIG(status))) +
                          "): " + LastLine(err_text));
    }
    report = json::parse(LastLine(out_text), nullptr, false);
    if (!report.is_object() || !fs::exists(partial, ec)) {
      clean();
      throw WorkloadError("technique " + json(technique).dump() +
                          ": the compiler printed no report: " + LastLine(out_text + err_text));
    }
    report["wall_s"] = wall_s;
    fs::rename(partial, file, ec);
    if (ec) {
      clean();
      throw WorkloadError("technique: cannot keep the compiled file in " + cache.string() + ": " +
                          ec.message());
    }
    const Status kept = WriteFileAtomically(report_path.string(), report.dump());
    clean();
    if (!kept.ok()) throw WorkloadError("technique: " + kept.message());
    PruneCache(cache, file);
  } else {
    // Used: the last to go when the cache is pruned.
    fs::last_write_time(file, fs::file_time_type::clock::now(), ec);
  }

  const auto load_started = SteadyClock::now();
  if (technique == "aoti") {
    const AotiPackageCheck check = CheckAotiPackage(file.string(), spec.device, "technique");
    compiled.model = LoadAotiPackage(file.string(), "technique");
    report["package_torch_version"] =
        check.torch_version.empty() ? json(nullptr) : json(check.torch_version);
  } else {
    compiled.model = LoadTorchScriptFile(file.string(), "technique");
  }
  json& out = compiled.report;
  out = json::object();
  out["technique"] = technique;
  out["cached"] = cached;
  for (const char* key : {"compile_s", "export_s", "package_sha256", "package_torch_version",
                          "inductor_configs", "quantization_config"}) {
    out[key] = report.contains(key) ? report[key] : json(nullptr);
  }
  out["load_s"] = SecondsSince(load_started);
  const json quantization = report.value("quantization", json(nullptr));
  if (quantization.is_string()) compiled.quantization = quantization.get<std::string>();
  return compiled;
}

}  // namespace benchfleet::worker
