#include "common/messages.h"

#include <gtest/gtest.h>

#include "common/golden_round_trip.h"

namespace benchfleet {
namespace {

using nlohmann::json;

Message Decoded(const json& body) {
  auto decoded = Decode(body.dump());
  EXPECT_TRUE(decoded.ok()) << decoded.status().message();
  return decoded.ok() ? *decoded : Message{};
}

json Register() {
  return {{"v", 1},
          {"type", "register"},
          {"agent", "node-a"},
          {"tags", {"lab"}},
          {"capabilities",
           {{"host", {{"machine_id", "m1"}, {"cpu_model", "AMD EPYC"}, {"logical_cpus", 2}}},
            {"torch", {{"cuda_available", false}}},
            {"gpus", json::array({{{"index", 0}, {"name", "NVIDIA H200"}, {"memory_mb", 141000}}})},
            {"cpus", "0-1"}}}};
}

TEST(MessagesTest, RegisterParsesCapabilitiesIntoTypedFields) {
  auto parsed = RegisterRequest::FromJson(Decoded(Register()).body);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->capabilities.host.machine_id.value_or(""), "m1");
  ASSERT_EQ(parsed->capabilities.gpus.size(), 1u);
  EXPECT_EQ(parsed->capabilities.gpus[0].name, "NVIDIA H200");
}

TEST(MessagesTest, NestedFieldsOfTheWrongTypeAreErrorsNamingThem) {
  struct Case {
    const char* pointer;
    json value;
    const char* names;
  };
  for (const Case& c : std::vector<Case>{
           {"/capabilities/host/machine_id", 1, "capabilities.host.machine_id"},
           {"/capabilities/host", "x", "capabilities.host"},
           {"/capabilities/gpus", json::object(), "capabilities.gpus"},
           {"/capabilities/gpus/0/name", 5, "capabilities.gpus[0].name"},
           {"/capabilities/torch/cuda_available", "yes", "capabilities.torch.cuda_available"},
           {"/capabilities/torch/cuda_version", 13.0, "capabilities.torch.cuda_version"},
           {"/capabilities/torch/cudnn_version", json::array(), "capabilities.torch.cudnn_version"},
           {"/tags/0", 3, "register.tags[0]"},
           {"/agent", "no spaces allowed", "register.agent"}}) {
    json body = Register();
    body[json::json_pointer(c.pointer)] = c.value;
    auto parsed = RegisterRequest::FromJson(Decoded(body).body);
    ASSERT_FALSE(parsed.ok()) << c.pointer;
    EXPECT_NE(parsed.status().message().find(c.names), std::string::npos)
        << c.pointer << ": " << parsed.status().message();
  }
}

TEST(MessagesTest, HeartbeatRunningIsNullOrAJobAttempt) {
  EXPECT_TRUE(
      Heartbeat::FromJson(Decoded({{"v", 1}, {"type", "heartbeat"}, {"running", nullptr}}).body)
          .ok());
  auto running = Heartbeat::FromJson(
      Decoded({{"v", 1}, {"type", "heartbeat"}, {"running", {{"job_id", 3}, {"attempt", 1}}}})
          .body);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->running->job_id, 3);
  auto five = Heartbeat::FromJson(Decoded({{"v", 1}, {"type", "heartbeat"}, {"running", 5}}).body);
  ASSERT_FALSE(five.ok());
  EXPECT_NE(five.status().message().find("heartbeat.running"), std::string::npos);
}

TEST(MessagesTest, ResultsLimitMustBeWithinTheDocumentedRange) {
  for (int64_t limit : {0, -1, 20000}) {
    auto parsed =
        ParseResults(Decoded({{"v", 1}, {"type", "results"}, {"request_id", 1}, {"limit", limit}}));
    ASSERT_FALSE(parsed.ok()) << limit;
    EXPECT_NE(parsed.status().message().find("results.limit"), std::string::npos);
  }
  auto ok = ParseResults(Decoded({{"v", 1}, {"type", "results"}, {"request_id", 1}, {"limit", 5}}));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->limit, 5);
}

TEST(MessagesTest, AnAgentErrorNamingAJobMustNameItFully) {
  json refusal = {
      {"v", 1},      {"type", "error"}, {"code", "failed_precondition"}, {"message", "busy"},
      {"job_id", 4}, {"attempt", 1}};
  auto parsed = ErrorReport::FromJson(Decoded(refusal).body);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->job->job_id, 4);
  refusal.erase("attempt");
  EXPECT_FALSE(ErrorReport::FromJson(Decoded(refusal).body).ok());
}

// A client request read from its golden example (schemas/golden/TYPE.json) and written
// back: the fields the CLI sends are the ones the coordinator reads.
template <typename Parse>
void ExpectRequestRoundTrip(const std::string& type, Parse parse) {
  SCOPED_TRACE(type);
  const Message golden = Golden(type);
  ASSERT_EQ(golden.type, type);
  auto parsed = parse(golden);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  json fields = golden.body;
  for (const char* envelope : {"v", "type", "request_id"}) fields.erase(envelope);
  EXPECT_EQ(parsed->ToJson(), fields);
  // And what it writes reads back the same, through the transport.
  Message sent = MakeMessage(type, parsed->ToJson());
  sent.body["request_id"] = golden.body["request_id"];  // the client adds it
  auto again = Decode(Encode(sent));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  auto reparsed = parse(*again);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().ToString();
  EXPECT_EQ(reparsed->ToJson(), fields);
}

TEST(MessagesTest, EveryClientRequestRoundTripsItsGoldenExample) {
  ExpectRequestRoundTrip("submit", ParseSubmit);
  ExpectRequestRoundTrip("status", ParseSweepRequest);
  ExpectRequestRoundTrip("cancel", ParseSweepRequest);
  ExpectRequestRoundTrip("results", ParseResults);
  ExpectRequestRoundTrip("query", ParseQuery);
  ExpectRequestRoundTrip("calibrate", ParseCalibrate);
  ExpectRequestRoundTrip("prune", ParsePrune);
  ExpectRequestRoundTrip("baseline_reset", ParseBaselineReset);
  ExpectRequestRoundTrip("set_price", ParseSetPrice);
  ExpectRequestRoundTrip("schedule", ParseSchedule);
}

TEST(MessagesTest, RequestsLeaveOutWhatTheyDoNotSay) {
  EXPECT_EQ(SweepRequest{}.ToJson(), json::object());
  EXPECT_EQ(BaselineResetRequest{}.ToJson(), json::object());
  EXPECT_EQ(CalibrateRequest{}.ToJson(), json({{"agents", json::array()}}));
  ScheduleRequest list;
  list.action = ScheduleRequest::Action::kList;
  const json body = list.ToJson();
  EXPECT_EQ(body["action"], "list");
  EXPECT_FALSE(body.contains("name"));
  EXPECT_FALSE(body.contains("sweep"));
  auto read = ParseSchedule(MakeMessage("schedule", body));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->action, ScheduleRequest::Action::kList);
}

}  // namespace
}  // namespace benchfleet
