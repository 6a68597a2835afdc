// The CLI's read commands and CI gates on a store file with no daemon in between
// (--db, cli/reads.h): a real store, filled by the coordinator in process as agents
// fill it (coordinator/coordinator_fixture.h), read through StoreFileReads.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <tuple>

#include "cli/commands.h"
#include "cli/reads.h"
#include "common/median.h"
#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;

// Two configurations (batch 1 and 32), enough raw samples a side for the rank test.
const json kPullRequest = json::parse(
    R"({"name": "pr", "placement": "any", "matrix": {"model": "mlp", "batch_size": [1, 32]}})");
constexpr int kSamples = 30;

struct Output {
  int code;
  std::string out;
};

// Runs a command, capturing what it prints on stdout.
Output Capture(const std::function<int()>& command) {
  std::stringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  const int code = command();
  std::cout.rdbuf(old);
  return {code, captured.str()};
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

class StoreFileTest : public CoordinatorTest {
 protected:
  // Answers every job offered to `peer` (reruns too) with kSamples samples around
  // `median_ms(spec)`, spread by 1%, and the host's pace `pace_ms(spec)` where given;
  // returns the jobs answered.
  std::vector<int64_t> AnswerAll(const std::string& peer,
                                 const std::function<double(const json&)>& median_ms,
                                 const std::function<double(const json&)>& pace_ms = nullptr) {
    std::vector<int64_t> answered;
    for (int round = 0; round < 50; ++round) {
      coordinator_->Tick();
      const Sent* offer = LastTo(peer, "job");
      if (!offer || answered_.count(offer->message.body["job_id"].get<int64_t>())) break;
      const json body = offer->message.body;  // a copy: sending moves sent_
      const double ms = median_ms(body["spec"]);
      std::vector<double> samples;
      for (int i = 0; i < kSamples; ++i)
        samples.push_back(ms * (0.995 + 0.01 * i / (kSamples - 1)));
      json result = GoodResult(body["spec"]);
      result["stats"]["n"] = kSamples;
      result["stats"]["median_ms"] = Median(samples);
      result["stats"]["mean_ms"] = Median(samples);
      result["stats"]["min_ms"] = samples.front();
      result["stats"]["max_ms"] = samples.back();
      result["samples_ms"] = samples;
      if (pace_ms) result["host_pace"] = {{"ms", pace_ms(body["spec"])}};
      FromAgent(peer, {{"v", 1},
                       {"type", "result"},
                       {"job_id", body["job_id"]},
                       {"attempt", body["attempt"]},
                       {"result", result}});
      answered_.insert(body["job_id"].get<int64_t>());
      answered.push_back(body["job_id"].get<int64_t>());
    }
    return answered;
  }
  int64_t Sweep(const json& sweep, const std::function<double(const json&)>& median_ms,
                const std::function<double(const json&)>& pace_ms = nullptr) {
    const int64_t id = Submit(sweep);
    EXPECT_FALSE(AnswerAll("node-a/1", median_ms, pace_ms).empty());
    return id;
  }
  std::string path() const { return (dir_ / "results.db").string(); }
  std::set<int64_t> answered_;
};

double Steady(const json&) { return 10.0; }
// Batch 32 a third slower, batch 1 as before.
double BatchSlower(const json& spec) { return spec.value("batch_size", 1) == 32 ? 13.0 : 10.0; }

TEST_F(StoreFileTest, CompareFailsOnSlowerAndWritesJunit) {
  Register("node-a");
  const int64_t a = Sweep(kPullRequest, Steady);
  const int64_t same = Sweep(kPullRequest, Steady);
  const int64_t slower = Sweep(kPullRequest, BatchSlower);
  coordinator_.reset();  // no daemon from here on: the file alone
  std::unique_ptr<Reads> reads = StoreFileReads(path());
  CompareOptions options;
  options.fail_on_slower = true;

  options.sweeps = {a, same};
  Output equal = Capture([&] { return CompareCommand(*reads, options, RowFormat::kTable); });
  EXPECT_EQ(equal.code, 0) << equal.out;
  EXPECT_EQ(Occurrences(equal.out, "unchanged"), 2u) << equal.out;

  options.sweeps = {a, slower};
  Output gated = Capture([&] { return CompareCommand(*reads, options, RowFormat::kTable); });
  EXPECT_EQ(gated.code, 1) << gated.out;
  EXPECT_EQ(Occurrences(gated.out, "slower"), 1u) << gated.out;
  EXPECT_EQ(Occurrences(gated.out, "unchanged"), 1u) << gated.out;
  options.fail_on_slower = false;  // the same output, no gate
  Output ungated = Capture([&] { return CompareCommand(*reads, options, RowFormat::kTable); });
  EXPECT_EQ(ungated.code, 0);
  EXPECT_EQ(ungated.out, gated.out);

  Output junit = Capture([&] { return CompareCommand(*reads, options, RowFormat::kJunit); });
  EXPECT_EQ(junit.code, 0);
  EXPECT_EQ(Occurrences(junit.out, "<testcase "), 2u) << junit.out;
  EXPECT_EQ(Occurrences(junit.out, "<failure "), 1u) << junit.out;
  const size_t batch32 = junit.out.find("name=\"mlp inference fp32 batch 32 threads");
  ASSERT_NE(batch32, std::string::npos) << junit.out;
  EXPECT_GT(junit.out.find("<failure "), batch32) << junit.out;
  EXPECT_LT(junit.out.find("<failure "), junit.out.find("</testcase>", batch32)) << junit.out;

  Output markdown = Capture([&] { return CompareCommand(*reads, options, RowFormat::kMarkdown); });
  EXPECT_EQ(markdown.out.rfind("**1 slower, 0 faster, 1 unchanged**\n\n| host |", 0), 0u)
      << markdown.out;

  // A pivot has no verdicts to gate on.
  options = CompareOptions{{a}, {"batch_size"}, "host", "", 1.05, true};
  EXPECT_EQ(Capture([&] { return CompareCommand(*reads, options, RowFormat::kTable); }).code, 2);
}

// diff's convention (cli/commands.h): 1 is only ever "found what --fail-on names"; a
// compare that could not compare exits 2 and says why, gate or no gate.
TEST_F(StoreFileTest, CompareExitsTwoWhenItCouldNotCompare) {
  Register("node-a");
  const int64_t a = Sweep(kPullRequest, Steady);
  const int64_t other = Sweep(json::parse(R"({"name": "other", "placement": "any",
                                             "matrix": {"model": "mlp", "batch_size": 8}})"),
                              Steady);
  const int64_t queued = Submit(kPullRequest);  // never answered: no results
  coordinator_.reset();
  std::unique_ptr<Reads> reads = StoreFileReads(path());
  struct Case {
    std::vector<int64_t> sweeps;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{a, a},
            "compare needs two different sweeps, got sweep " + std::to_string(a) + " twice"},
           {{a, 999}, "no sweep 999"},
           {{a, queued}, "sweep " + std::to_string(queued) + " has no results"},
           {{a, other}, "have no configuration in common"}}) {
    for (const bool gate : {false, true}) {
      CompareOptions options;
      options.sweeps = c.sweeps;
      options.fail_on_slower = gate;
      testing::internal::CaptureStderr();
      const Output o = Capture([&] { return CompareCommand(*reads, options, RowFormat::kTable); });
      const std::string err = testing::internal::GetCapturedStderr();
      EXPECT_EQ(o.code, kExitCannotCompare) << c.says << "\n" << o.out << err;
      EXPECT_NE(err.find(c.says), std::string::npos) << err;
    }
  }
  // A store that cannot be read: could not compare, and no regressions read either.
  std::unique_ptr<Reads> missing = StoreFileReads((dir_ / "no-such.db").string());
  CompareOptions options;
  options.sweeps = {1, 2};
  options.fail_on_slower = true;
  testing::internal::CaptureStderr();
  EXPECT_EQ(CompareCommand(*missing, options, RowFormat::kTable), kExitCannotCompare);
  EXPECT_EQ(RegressionsCommand(*missing, "", RowFormat::kTable, true), kExitCannotCompare);
  EXPECT_EQ(RegressionsCommand(*reads, "bogus", RowFormat::kTable, true), kExitCannotCompare);
  testing::internal::GetCapturedStderr();
}

TEST_F(StoreFileTest, ReadCommandsAnswerFromTheFile) {
  Register("node-a");
  const int64_t a = Sweep(kPullRequest, Steady);
  coordinator_.reset();
  std::unique_ptr<Reads> reads = StoreFileReads(path());
  Output results =
      Capture([&] { return ResultsCommand(*reads, a, RowFormat::kCsv, ResultColumnChoice{}); });
  EXPECT_EQ(results.code, 0);
  EXPECT_EQ(Occurrences(results.out, "\n"), 3u) << results.out;  // the header, two results
  EXPECT_EQ(Capture([&] {
              return ResultsCommand(*reads, 99, RowFormat::kCsv, ResultColumnChoice{});
            }).code,
            1);
  Output query = Capture(
      [&] { return QueryCommand(*reads, "select count(*) as n from samples", RowFormat::kCsv); });
  EXPECT_EQ(query.out, "n\n" + std::to_string(2 * kSamples) + "\n");
  // The file's connection is the query thread's: nothing but reads.
  EXPECT_EQ(
      QueryCommand(*reads, "ATTACH '" + (dir_ / "other.db").string() + "' AS o", RowFormat::kCsv),
      2);
  EXPECT_EQ(QueryCommand(*reads, "delete from results", RowFormat::kCsv), 2);
  // Not a store: a missing file, an SQLite file of something else.
  EXPECT_EQ(QueryCommand(*StoreFileReads((dir_ / "nope.db").string()), "select 1", RowFormat::kCsv),
            2);
  {
    auto other =
        Database::Open((dir_ / "other.db").string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE((*other)->Exec("CREATE TABLE notes(text)").ok());
  }
  std::stringstream errors;
  std::streambuf* old = std::cerr.rdbuf(errors.rdbuf());
  const int code =
      QueryCommand(*StoreFileReads((dir_ / "other.db").string()), "select 1", RowFormat::kCsv);
  std::cerr.rdbuf(old);
  EXPECT_EQ(code, 2);
  EXPECT_NE(errors.str().find("is not a benchfleet results store"), std::string::npos)
      << errors.str();
}

TEST_F(StoreFileTest, RegressionsFailOnAConfirmedRegressionOnly) {
  const json nightly = json::parse(
      R"({"name": "nightly", "placement": "any", "matrix": {"model": "mlp", "batch_size": 32}})");
  Register("node-a");
  std::mt19937 random(7);
  std::normal_distribution<double> noise(0.0, 0.03);  // 3% noise around 10 ms, night to night
  for (int night = 0; night < 30; ++night) {
    const double ms = 10.0 * (1 + noise(random));
    Sweep(nightly, [&](const json&) { return ms; });
  }
  std::unique_ptr<Reads> reads = StoreFileReads(path());
  Output quiet =
      Capture([&] { return RegressionsCommand(*reads, "24h", RowFormat::kTable, true); });
  EXPECT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_NE(quiet.out.find("no confirmed regression"), std::string::npos) << quiet.out;
  // A 15% slowdown that its reruns reproduce: confirmed.
  Sweep(nightly, [&](const json&) { return 11.5 * (1 + noise(random) / 3); });
  ASSERT_EQ(Query("SELECT count(*) FROM confirmed_regressions WHERE direction = 'slower'")[0][0],
            1);
  coordinator_.reset();
  reads = StoreFileReads(path());
  Output gated =
      Capture([&] { return RegressionsCommand(*reads, "24h", RowFormat::kTable, true); });
  EXPECT_EQ(gated.code, 1) << gated.out;
  Output ungated =
      Capture([&] { return RegressionsCommand(*reads, "24h", RowFormat::kTable, false); });
  EXPECT_EQ(ungated.code, 0);
  EXPECT_EQ(ungated.out, gated.out);
  Output junit =
      Capture([&] { return RegressionsCommand(*reads, "24h", RowFormat::kJunit, true); });
  EXPECT_EQ(junit.code, 1);
  EXPECT_EQ(Occurrences(junit.out, "<testcase "), 1u) << junit.out;
  EXPECT_EQ(Occurrences(junit.out, "<failure message=\"confirmed regression: "), 1u) << junit.out;
}

// The host's pace (docs/regressions.md, Host pace): every configuration 15% slower in a
// second sweep whose host ran its pace reference 15% slower too, and in a third whose
// host kept its pace.
TEST_F(StoreFileTest, CompareCallsAChangeTheHostsWhenItsPaceMovedAlike) {
  const json three = json::parse(
      R"({"name": "pr", "placement": "any", "matrix": {"model": "mlp", "batch_size": [1, 8, 32]}})");
  Register("node-a");
  auto pace = [](double ms) { return [ms](const json&) { return ms; }; };
  auto slower = [](const json&) { return 11.5; };
  const int64_t a = Sweep(three, Steady, pace(0.1));
  const int64_t slow_host = Sweep(three, slower, pace(0.115));
  const int64_t slow_code = Sweep(three, slower, pace(0.1));
  coordinator_.reset();
  std::unique_ptr<Reads> reads = StoreFileReads(path());
  CompareOptions options;
  options.fail_on_slower = true;
  for (const auto& [b, change, ratio] : {std::make_tuple(slow_host, "host slower", 1.15),
                                         std::make_tuple(slow_code, "slower", 1.0)}) {
    options.sweeps = {a, b};
    Output table = Capture([&] { return CompareCommand(*reads, options, RowFormat::kJson); });
    EXPECT_EQ(table.code, b == slow_code ? 1 : 0)
        << "only the code's slowdown fails the gate: " << table.out;
    const json rows = json::parse(table.out, nullptr, false);
    ASSERT_TRUE(rows.is_array() && rows.size() == 3) << table.out;
    for (const json& row : rows) {
      EXPECT_EQ(row["change"], change) << row.dump();
      EXPECT_NEAR(row["host_pace_ratio"].get<double>(), ratio, 1e-9) << row.dump();
      EXPECT_NEAR(row["ratio"].get<double>(), 1.15, 0.01) << row.dump();
    }
  }
  options.sweeps = {a, slow_host};
  Output markdown = Capture([&] { return CompareCommand(*reads, options, RowFormat::kMarkdown); });
  EXPECT_EQ(
      markdown.out.rfind("**0 slower, 0 faster, 0 unchanged, 3 moved with the host's pace**", 0),
      0u)
      << markdown.out;
  Output junit = Capture([&] { return CompareCommand(*reads, options, RowFormat::kJunit); });
  EXPECT_EQ(Occurrences(junit.out, "<testcase "), 3u) << junit.out;
  EXPECT_EQ(Occurrences(junit.out, "<failure "), 0u) << junit.out;
  EXPECT_EQ(Occurrences(junit.out, "<skipped "), 0u) << junit.out;
}

TEST_F(StoreFileTest, AMedianThatMovedWithTheHostsPaceIsTheHostsAndNeverARegression) {
  const json nightly = json::parse(
      R"({"name": "nightly", "placement": "any", "matrix": {"model": "mlp", "batch_size": 32}})");
  Register("node-a");
  std::mt19937 random(11);
  std::normal_distribution<double> noise(0.0, 0.01);  // quiet nights: no step of their own
  auto pace = [](double ms) { return [ms](const json&) { return ms; }; };
  for (int night = 0; night < 20; ++night) {
    const double ms = 10.0 * (1 + noise(random));
    Sweep(
        nightly, [&](const json&) { return ms; }, pace(0.1));
  }
  // 15% slower, and so was the host's pace all night (the candidate and its reruns): the
  // host's, never a regression.
  const int64_t host_night = Sweep(
      nightly, [](const json&) { return 11.5; }, pace(0.115));
  const json host = Query(
      "SELECT g.state, g.direction, round(g.host_pace_change, 3), json_array_length(g.reruns), "
      "g.sweep_id, round(g.change, 2), g.reason FROM regressions g");
  ASSERT_EQ(host.size(), 1u) << host.dump();
  EXPECT_EQ(host[0][0], "host") << host.dump();
  EXPECT_EQ(host[0][1], "slower") << host.dump();
  EXPECT_EQ(host[0][2], 0.15) << host.dump();
  EXPECT_EQ(host[0][3], 3) << host.dump();
  EXPECT_EQ(host[0][4], host_night) << host.dump();
  EXPECT_EQ(host[0][5], 0.15) << host.dump();
  EXPECT_NE(host[0][6].get<std::string>().find("the host's, not the code's"), std::string::npos)
      << host.dump();
  // 15% slower on a host that kept its pace: the code's, confirmed by its reruns.
  Sweep(
      nightly, [](const json&) { return 11.5; }, pace(0.1));
  const json confirmed =
      Query("SELECT count(*), max(abs(host_pace_change_pct)) FROM confirmed_regressions");
  EXPECT_EQ(confirmed[0][0], 1) << confirmed.dump();
  EXPECT_LT(confirmed[0][1].get<double>(), 5) << "the host kept its pace: " << confirmed.dump();
  // And 15% slower while the host ran 13% faster: the code's (a host never hides a change
  // against its own).
  Sweep(
      nightly, [](const json&) { return 13.2; }, pace(0.087));
  coordinator_.reset();
  std::unique_ptr<Reads> reads = StoreFileReads(path());
  Output listed =
      Capture([&] { return RegressionsCommand(*reads, "24h", RowFormat::kJson, true); });
  EXPECT_EQ(listed.code, 1) << listed.out;
  const json listed_rows = json::parse(listed.out, nullptr, false);
  ASSERT_TRUE(listed_rows.is_array()) << listed.out;
  EXPECT_EQ(listed_rows.size(), 2u) << "the code's two steps, not the host's: " << listed.out;
}

}  // namespace
}  // namespace benchfleet
