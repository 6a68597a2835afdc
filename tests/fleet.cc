#include "tests/fleet.h"

#include <sqlite3.h>

#include <filesystem>
#include <sstream>

#include "cli/model_upload.h"

using nlohmann::json;

namespace benchfleet::testing {

const char* kCoordinatorBin = BENCHFLEET_COORDINATOR_BIN;
const char* kAgentBin = BENCHFLEET_AGENT_BIN;
const char* kWorkerBin = BENCHFLEET_WORKER_BIN;
const char* kResultWorkerBin = BENCHFLEET_RESULT_WORKER_BIN;
const char* kCliBin = BENCHFLEET_CLI_BIN;
const char* kSecondWorkerBin = BENCHFLEET_SECOND_WORKER_BIN;
const char* kTorchPython = BENCHFLEET_TORCH_PYTHON;
const char* kTestPackageCache = BENCHFLEET_TEST_PACKAGE_CACHE;

Fleet::Fleet(FleetOptions options) : options_(std::move(options)), dir_("bf-fleet") {
  db_path_ = options_.db_path.empty() ? dir_ / "results.db" : options_.db_path;
}

Fleet::~Fleet() {
  client_.reset();
  for (auto& [name, agent] : agents_) agent->Stop();
  coordinator_.Stop();
}

bool Fleet::StartCoordinator() {
  const std::string ready = dir_ / "coordinator.ready";
  std::filesystem::remove(ready);
  std::vector<std::string> argv = {
      kCoordinatorBin,
      "--db",
      db_path_,
      "--agents",
      agents_endpoint_.empty() ? "tcp://127.0.0.1:*" : agents_endpoint_,
      "--clients",
      clients_endpoint_.empty() ? "tcp://127.0.0.1:*" : clients_endpoint_,
      "--heartbeat-ms",
      std::to_string(options_.heartbeat_ms),
      "--liveness",
      std::to_string(options_.liveness),
      "--ready-file",
      ready};
  if (options_.processes > 0) {
    argv.push_back("--processes");
    argv.push_back(std::to_string(options_.processes));
  }
  argv.insert(argv.end(), options_.coordinator_flags.begin(), options_.coordinator_flags.end());
  if (!coordinator_.Start(argv, dir_ / "coordinator.log")) return false;
  bool up = WaitFor([&] { return std::filesystem::exists(ready) || !coordinator_.running(); },
                    std::chrono::seconds(30));
  if (!up || !coordinator_.running()) return false;
  auto endpoints = nlohmann::json::parse(ReadFile(ready), nullptr, false);
  if (!endpoints.is_object()) return false;
  agents_endpoint_ = endpoints["agents"];
  clients_endpoint_ = endpoints["clients"];
  client_.reset();
  return true;
}

bool Fleet::StartAgent(const std::string& name, const std::vector<std::string>& extra_flags,
                       const std::string& endpoint) {
  std::vector<std::string> argv = {
      kAgentBin, "--coordinator", endpoint.empty() ? agents_endpoint_ : endpoint, "--name", name,
      "--worker", options_.worker.empty() ? std::string(kWorkerBin) : options_.worker,
      "--state-dir", dir_ / ("agent-" + name), "--heartbeat-ms",
      std::to_string(options_.heartbeat_ms),
      // One cache of compiled packages for every test's agents.
      "--package-cache", kTestPackageCache};
  if (!options_.calibrate_agents) argv.push_back("--no-calibrate");
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  auto process = std::make_unique<ChildProcess>();
  if (!process->Start(argv, dir_ / ("agent-" + name + ".log"))) return false;
  agents_[name] = std::move(process);
  return true;
}

CoordinatorClient& Fleet::client() {
  if (!client_) {
    auto connected = CoordinatorClient::Connect(clients_endpoint_, 10000);
    if (connected.ok()) client_ = std::move(connected).value();
  }
  return *client_;
}

nlohmann::json Fleet::Status() {
  auto reply = client().Call(msg::kStatus, nlohmann::json::object());
  if (!reply.ok()) return nullptr;
  return reply->body;
}

bool Fleet::WaitForAgents(size_t count, std::chrono::milliseconds timeout) {
  return WaitFor(
      [&] {
        auto status = Status();
        return status.is_object() && status["agents"].size() >= count;
      },
      timeout);
}

nlohmann::json Fleet::WaitForSweep(int64_t sweep_id, std::chrono::milliseconds timeout) {
  nlohmann::json last;
  bool ended = WaitFor(
      [&] {
        auto reply = client().Call(msg::kStatus, {{"sweep_id", sweep_id}});
        if (!reply.ok()) return false;
        last = reply->body["sweeps"][0];
        return last["state"] != "running";
      },
      timeout);
  return ended ? last : nlohmann::json();
}

int64_t Fleet::Submit(const nlohmann::json& sweep, std::string* error) {
  // As `benchfleet submit` does: the model files it names by path go by content.
  nlohmann::json shipped = sweep;
  std::ostringstream progress;
  const benchfleet::Status uploaded = UploadModels(client(), &shipped, progress);
  if (!uploaded.ok()) {
    if (error) *error = uploaded.message();
    return -1;
  }
  auto reply = client().Call(msg::kSubmit, {{"sweep", shipped}});
  if (!reply.ok()) {
    if (error) *error = reply.status().message();
    return -1;
  }
  return reply->body["sweep_id"];
}

size_t Fleet::SpooledResults(const std::string& name) const {
  size_t count = 0;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir_ / ("agent-" + name) + "/spool", ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > 12 && file.compare(file.size() - 12, 12, ".result.json") == 0) ++count;
  }
  return count;
}

std::string Fleet::AgentRunning(int64_t job_id) {
  json status = Status();
  if (!status.is_object()) return "";
  for (const json& agent : status["agents"]) {
    if (agent["job_id"] == job_id) return agent["agent"];
  }
  return "";
}

std::string Fleet::Logs() const {
  std::string logs;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    if (entry.path().extension() == ".log") {
      logs += "==== " + entry.path().filename().string() + "\n" + ReadFile(entry.path().string());
    }
  }
  return logs;
}

nlohmann::json QueryRows(const std::string& path, const std::string& sql) {
  nlohmann::json rows = nlohmann::json::array();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return rows;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      nlohmann::json row = nlohmann::json::object();
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        std::string name = sqlite3_column_name(stmt, c);
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER:
            row[name] = sqlite3_column_int64(stmt, c);
            break;
          case SQLITE_FLOAT:
            row[name] = sqlite3_column_double(stmt, c);
            break;
          case SQLITE_TEXT:
            row[name] = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            break;
          default:
            row[name] = nullptr;
        }
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

nlohmann::json QueryValue(const std::string& path, const std::string& sql) {
  auto rows = QueryRows(path, sql);
  if (rows.empty() || rows[0].empty()) return nullptr;
  return rows[0].begin().value();
}

}  // namespace benchfleet::testing
