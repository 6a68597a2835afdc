// The fixture of the coordinator's in-process tests: a real store (SQLite file), the
// real query thread, messages in and out through an outbox instead of sockets, and a
// wall clock the test moves (schedules).
#pragma once

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/clock.h"
#include "common/files.h"
#include "common/test_paths.h"
#include "coordinator/coordinator.h"

namespace benchfleet {
namespace testing_fixture {

inline const std::filesystem::path kSchemas = test_paths::SchemasDir();

inline std::string ReadFile(const std::filesystem::path& path) {
  auto text = ReadWholeFile(path.string());
  return text.ok() ? std::move(text).value() : std::string();
}

struct Sent {
  Side side;
  std::string peer;
  Message message;
};

inline json Capabilities(int gpus, const std::string& machine_id) {
  json list = json::array();
  for (int i = 0; i < gpus; ++i)
    list.push_back({{"index", i}, {"name", "NVIDIA H200"}, {"memory_mb", 141000}});
  return {{"host", {{"hostname", "h"}, {"machine_id", machine_id}, {"cpu_model", "AMD EPYC"}}},
          {"torch", {{"torch_version", "1.13.0"}, {"cuda_available", gpus > 0}}},
          {"gpus", list},
          {"cpus", "0-1"}};
}

// A worker's result for `spec`. at() and value(), never a const operator[]: a spec may
// lack batch_size (a max-batch search starts at 1), and a const [] of a missing key is
// undefined behaviour (it read freed memory and crashed now and then).
inline json GoodResult(const json& spec) {
  return {{"ok", true},
          {"model", spec.at("model")},
          {"batch_size", spec.value("batch_size", json(1))},
          {"stats",
           {{"n", 10},
            {"median_ms", 1.0},
            {"mean_ms", 1.0},
            {"min_ms", 0.9},
            {"max_ms", 1.2},
            {"noisy", false}}},
          {"samples_ms", {1.0, 1.0}}};
}

// Expects `actual` to have the keys of `golden`, at every depth: a reply against its
// golden example, so that protocol.md, the examples and the code agree.
inline void ExpectSameKeys(const json& golden, const json& actual, const std::string& where) {
  if (golden.is_object()) {
    ASSERT_TRUE(actual.is_object()) << where;
    std::set<std::string> want, got;
    for (const auto& [key, value] : golden.items()) want.insert(key);
    for (const auto& [key, value] : actual.items()) got.insert(key);
    EXPECT_EQ(want, got) << where;
    for (const auto& [key, value] : golden.items()) {
      if (actual.contains(key) && !actual[key].is_null() && !value.is_null()) {
        ExpectSameKeys(value, actual[key], where + "." + key);
      }
    }
  } else if (golden.is_array() && !golden.empty() && actual.is_array() && !actual.empty()) {
    ExpectSameKeys(golden[0], actual[0], where + "[0]");
  }
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-coord-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    StartWithStoreAt(dir_ / "results.db");
  }
  void StartWithStoreAt(const std::filesystem::path& db_path) {
    coordinator_.reset();
    CoordinatorOptions options;
    options.default_processes = 1;  // each job runs once: repeats are ProcessesTest's
    options.db_path = db_path.string();
    options.heartbeat_ms = heartbeat_ms_;  // by default, nothing expires while a test runs
    if (manual_time_) options.clock = &clock_;
    // The wall clock schedules fire by: the test's once it sets wall_s_.
    options.wall_clock_s = [this] { return wall_s_ > 0 ? wall_s_ : UnixMicrosNow() / 1000000; };
    coordinator_ = std::make_unique<Coordinator>(options);
    Status started = coordinator_->StartInProcess(
        [this](Side side, const std::string& peer, const Message& message) -> Status {
          if (gone_.count(peer)) return NotFound("peer is gone: Host unreachable");
          sent_.push_back({side, peer, message});
          return Status::Ok();
        });
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  void TearDown() override {
    coordinator_.reset();  // closes the store before a small disk goes
    if (!small_disk_.empty()) umount2(small_disk_.c_str(), MNT_DETACH);
    std::filesystem::remove_all(dir_);
  }
  // Mounts a tmpfs of `size` ("size=4m") at dir_/disk, unmounted by TearDown; returns
  // why it could not (needs root and CAP_SYS_ADMIN), or "" once mounted.
  std::string MountSmallDisk(const char* size) {
    const std::filesystem::path disk = dir_ / "disk";
    std::filesystem::create_directories(disk);
    if (mount("tmpfs", disk.c_str(), "tmpfs", 0, size) != 0) return std::strerror(errno);
    small_disk_ = disk;
    return "";
  }
  // Fills the small disk to its last byte; FreeSmallDisk gives the space back.
  void FillSmallDisk() {
    std::ofstream fill(small_disk_ / "filler", std::ios::binary);
    std::string block(4096, 'x');
    while (fill.write(block.data(), block.size())) {
    }
  }
  void FreeSmallDisk() { std::filesystem::remove(small_disk_ / "filler"); }
  // The coordinator's reply to the client request `request_id`, if sent.
  const Sent* AnswerTo(const json& request_id) const {
    for (const Sent& sent : sent_) {
      if (sent.side == Side::kClients &&
          sent.message.body.value("request_id", json()) == request_id)
        return &sent;
    }
    return nullptr;
  }

  void FromAgent(const std::string& peer, const json& body) {
    coordinator_->HandleAgent({peer, body.dump()});
  }
  void Register(const std::string& name, int gpus = 0, const std::string& machine = "") {
    FromAgent(name + "/1",
              {{"v", 1},
               {"type", "register"},
               {"agent", name},
               {"tags", json::array()},
               {"capabilities", Capabilities(gpus, machine.empty() ? name : machine)}});
  }
  // Sends a client request and returns the coordinator's reply to it.
  Message Request(json body) {
    body["v"] = 1;
    body["request_id"] = "r" + std::to_string(++requests_);
    coordinator_->HandleClient({"client", body.dump()});
    for (int i = 0; i < 100; ++i) {
      for (auto it = sent_.rbegin(); it != sent_.rend(); ++it) {
        if (it->side == Side::kClients &&
            it->message.body.value("request_id", json()) == body["request_id"]) {
          return it->message;
        }
      }
      if (body["type"] == "submit") {
        coordinator_->Tick();  // a large sweep is checked a slice per round, then answered
      } else {
        coordinator_->DeliverReadReplies(Millis(100));
      }
    }
    ADD_FAILURE() << "no reply to " << body.dump();
    return Message{};
  }
  // Ticks until every job of a large sweep is stored (a slice per round).
  void TickUntilStored(int64_t sweep_id) {
    for (int i = 0; i < 1000; ++i) {
      Message status = Request({{"type", "status"}, {"sweep_id", sweep_id}});
      if (status.body["sweeps"][0]["jobs"]["storing"] == 0) return;
      coordinator_->Tick();
    }
    ADD_FAILURE() << "sweep " << sweep_id << " never stored all its jobs";
  }
  int64_t Submit(const json& sweep, const std::string& submission_id = "") {
    json request = {{"type", "submit"}, {"sweep", sweep}};
    if (!submission_id.empty()) request["submission_id"] = submission_id;
    Message reply = Request(request);
    EXPECT_EQ(reply.type, "submitted") << reply.body.dump();
    return reply.body.value("sweep_id", int64_t{0});
  }
  // Job offers sent to `peer`, oldest first.
  std::vector<json> OffersTo(const std::string& peer) {
    std::vector<json> offers;
    for (const Sent& s : sent_) {
      if (s.peer == peer && s.message.type == "job") offers.push_back(s.message.body);
    }
    return offers;
  }
  const Sent* LastTo(const std::string& peer, const std::string& type) {
    for (auto it = sent_.rbegin(); it != sent_.rend(); ++it) {
      if (it->peer == peer && it->message.type == type) return &*it;
    }
    return nullptr;
  }
  json Query(const std::string& sql) {
    Message reply = Request({{"type", "query"}, {"sql", sql}});
    EXPECT_EQ(reply.type, "rows") << reply.body.dump();
    return reply.body.value("rows", json::array());
  }

  std::filesystem::path dir_;
  std::filesystem::path small_disk_;  // mounted by MountSmallDisk
  std::unique_ptr<Coordinator> coordinator_;
  std::vector<Sent> sent_;
  std::set<std::string> gone_;
  int requests_ = 0;
  int64_t wall_s_ = 0;  // Unix seconds; 0: the system clock
  // Monotonic time: the system's, or, once a test sets manual_time_ and starts again
  // (StartWithStoreAt), clock_, which stands still until the test moves it.
  bool manual_time_ = false;
  ManualMonotonicClock clock_;
  int heartbeat_ms_ = 60000;
};

}  // namespace testing_fixture
}  // namespace benchfleet
