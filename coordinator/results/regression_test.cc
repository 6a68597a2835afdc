// Regression detection on a real store, driven through the coordinator as agents drive
// it: a series seeded with 30 results at 3% noise, then a 2% change, a lone 15% outlier,
// a 15% slowdown, and the same slowdown on a host whose fingerprint changed.
#include <gtest/gtest.h>

#include <random>

#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;
using testing_fixture::Capabilities;  // not benchfleet::Capabilities

const json kNightly = json::parse(
    R"({"name": "nightly", "placement": "any", "matrix": {"model": "mlp", "batch_size": 32}})");

class RegressionTest : public CoordinatorTest {
 protected:
  // Answers every job offered to `peer` with a median of `median_ms(job)`, until none is
  // left (reruns are offered one after another); returns the jobs answered.
  std::vector<int64_t> AnswerAll(const std::string& peer,
                                 const std::function<double()>& median_ms) {
    std::vector<int64_t> answered;
    for (int round = 0; round < 20; ++round) {
      coordinator_->Tick();
      const Sent* offer = LastTo(peer, "job");
      if (!offer || answered_.count(offer->message.body["job_id"].get<int64_t>())) break;
      const json body = offer->message.body;  // a copy: sending moves sent_
      const double ms = median_ms();
      json result = GoodResult(body["spec"]);
      result["stats"]["median_ms"] = ms;
      result["stats"]["mean_ms"] = ms;
      result["stats"]["min_ms"] = ms * 0.99;
      result["stats"]["max_ms"] = ms * 1.01;
      result["samples_ms"] = {ms, ms};
      result["stats"]["noisy"] = noisy_;
      if (interval_ > 0) {
        result["stats"]["median_ci_low_ms"] = ms * (1 - interval_);
        result["stats"]["median_ci_high_ms"] = ms * (1 + interval_);
      }
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
  // One night: the sweep submitted, its job answered with `ms`, and any reruns it
  // caused answered by `rerun_ms`.
  int64_t Night(double ms, const std::function<double()>& rerun_ms) {
    Submit(kNightly);
    bool first = true;
    std::vector<int64_t> jobs = AnswerAll("node-a/1", [&] {
      const double value = first ? ms : rerun_ms();
      first = false;
      return value;
    });
    EXPECT_FALSE(jobs.empty());
    return jobs.empty() ? 0 : jobs.front();
  }
  // Every result answered from now on carries a median interval of +-`relative` and
  // this noisy flag (the worker's precision), until set again.
  void AnswerWithInterval(double relative, bool noisy) {
    interval_ = relative;
    noisy_ = noisy;
  }
  double interval_ = 0;
  bool noisy_ = false;
  json Regression(int64_t job_id) {
    json rows = Query(
        "SELECT state, direction, change, baseline_n, json_array_length(reruns), z "
        "FROM regressions WHERE job_id = " +
        std::to_string(job_id));
    return rows.empty() ? json(nullptr) : rows[0];
  }
  std::set<int64_t> answered_;
};

TEST_F(RegressionTest, ASlowdownIsConfirmedByItsRerunsAndNoiseIsNot) {
  Register("node-a");
  std::mt19937 random(7);
  std::normal_distribution<double> noise(0.0, 0.03);  // 3% noise around 10 ms
  auto normal = [&] { return 10.0 * (1 + noise(random)); };
  for (int night = 0; night < 30; ++night) Night(normal(), normal);
  // Seeding may raise candidates while the series is short (the relative test alone),
  // but reruns at the same noise never confirm one.
  EXPECT_EQ(Query("SELECT count(*) FROM regressions WHERE state = 'confirmed'")[0][0], 0);
  EXPECT_EQ(Query("SELECT count(*) FROM regressions WHERE state = 'candidate'")[0][0], 0);
  const json series = Query("SELECT DISTINCT series FROM results WHERE series IS NOT NULL");
  ASSERT_EQ(series.size(), 1u) << "one configuration on one host: one series";

  // A 2% change: not even a candidate.
  const int64_t small = Night(10.2, normal);
  EXPECT_TRUE(Regression(small).is_null()) << Regression(small).dump();

  // A lone 15% outlier that its reruns do not reproduce: recorded as noise.
  const int64_t outlier = Night(11.5, normal);
  json verdict = Regression(outlier);
  ASSERT_FALSE(verdict.is_null());
  EXPECT_EQ(verdict[0], "noise");
  EXPECT_EQ(verdict[3], 30);  // judged against the last 30 good results
  EXPECT_EQ(verdict[4], 3);   // three reruns on the same host
  EXPECT_EQ(Query("SELECT count(DISTINCT host) FROM result_summary WHERE job_id IN "
                  "(SELECT job_id FROM jobs WHERE confirms_job_id = " +
                  std::to_string(outlier) + ")")[0][0],
            1);

  // A real 15% slowdown: its reruns are as slow, so it is confirmed and reported.
  const int64_t slowdown = Night(11.5, [&] { return 1.15 * normal(); });
  verdict = Regression(slowdown);
  ASSERT_FALSE(verdict.is_null());
  EXPECT_EQ(verdict[0], "confirmed");
  EXPECT_EQ(verdict[1], "slower");
  EXPECT_NEAR(verdict[2].get<double>(), 0.15, 0.05);
  EXPECT_GT(verdict[5].get<double>(), 4);  // the robust z-score
  const json reported =
      Query("SELECT job_id, host, change_pct, baseline_n, reruns FROM confirmed_regressions");
  ASSERT_EQ(reported.size(), 1u) << reported.dump();
  EXPECT_EQ(reported[0][0], slowdown);
  EXPECT_EQ(reported[0][1], "node-a");

  // The same slowdown after the host's LibTorch changed (the agent registers again): a new
  // fingerprint, a new series, a baseline reset, not a regression.
  json capabilities = Capabilities(0, "node-a");
  capabilities["torch"]["torch_version"] = "2.1.0";
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "register"},
                         {"agent", "node-a"},
                         {"tags", json::array()},
                         {"capabilities", capabilities}});
  for (int night = 0; night < 3; ++night) {
    Submit(kNightly);
    AnswerAll("node-a/1", [&] { return 1.15 * normal(); });
  }
  EXPECT_EQ(Query("SELECT count(DISTINCT series) FROM results WHERE series IS NOT NULL")[0][0], 2);
  // The slower results are never judged against the old series' baseline (a young
  // series' noise may still raise a candidate, judged within the new series, that its
  // reruns then call noise).
  for (const json& row : Query("SELECT baseline_median_ms, state FROM regressions WHERE job_id > " +
                               std::to_string(slowdown) +
                               " AND job_id NOT IN (SELECT job_id FROM jobs "
                               "WHERE confirms_job_id = " +
                               std::to_string(slowdown) + ")")) {
    EXPECT_GT(row[0].get<double>(), 11.0) << row.dump();
    EXPECT_NE(row[1], "confirmed") << row.dump();
  }
  EXPECT_EQ(Query("SELECT count(*) FROM confirmed_regressions")[0][0], 1);
  // The fingerprint keeps its parts: what changed is there to see.
  EXPECT_EQ(Query("SELECT json_extract(fingerprint_parts, '$.torch_version') FROM hosts")[0][0],
            "2.1.0");
}

TEST_F(RegressionTest, ABaselineResetMarksAKnownStepSoItIsNotFlagged) {
  Register("node-a");
  for (int night = 0; night < 12; ++night) Night(10.0 + 0.01 * night, [] { return 10.0; });
  Message reset = Request({{"type", "baseline_reset"}, {"host", "node-a"}, {"note", "new BIOS"}});
  ASSERT_EQ(reset.type, "rows") << reset.body.dump();
  // Results before the reset leave the baseline: the slower nights that follow start it
  // afresh instead of being flagged.
  for (int night = 0; night < 3; ++night) Night(12.0, [] { return 12.0; });
  EXPECT_EQ(Query("SELECT count(*) FROM regressions")[0][0], 0);
}

// A persistent step is one change point: confirmed on the night it is first seen, and the
// nights after it are judged against the new level, so it is not confirmed again each
// morning (on 11 nights after a 12% step, the same slowdown was confirmed anew every
// night while the old level filled the window).
TEST_F(RegressionTest, APersistentStepIsReportedOnce) {
  Register("node-a");
  std::mt19937 random(11);
  std::normal_distribution<double> noise(0.0, 0.02);
  auto at = [&](double level) {
    return [&random, &noise, level] { return level * (1 + noise(random)); };
  };
  for (int night = 0; night < 30; ++night) Night(at(10.0)(), at(10.0));
  const int64_t step = Night(11.2, at(11.2));
  ASSERT_FALSE(Regression(step).is_null());
  EXPECT_EQ(Regression(step)[0], "confirmed");
  for (int night = 0; night < 11; ++night) Night(at(11.2)(), at(11.2));
  const json reported = Query(
      "SELECT job_id, first_seen_sweep_id, first_seen_at, direction "
      "FROM confirmed_regressions");
  ASSERT_EQ(reported.size(), 1u) << reported.dump();
  EXPECT_EQ(reported[0][0], step);
  EXPECT_EQ(reported[0][1],
            Query("SELECT sweep_id FROM jobs WHERE job_id = " + std::to_string(step))[0][0]);
  EXPECT_TRUE(reported[0][2].is_string());
  // The nights after the step raised no candidate at all: their baseline is the new level.
  EXPECT_EQ(Query("SELECT count(*) FROM regressions WHERE job_id > " + std::to_string(step) +
                  " AND job_id NOT IN (SELECT job_id FROM jobs WHERE confirms_job_id = " +
                  std::to_string(step) + ")")[0][0],
            0);
  // A second, later step (back to 10 ms: an improvement) is its own change point.
  const int64_t back = Night(10.0, at(10.0));
  EXPECT_EQ(Regression(back)[0], "confirmed");
  EXPECT_EQ(Regression(back)[1], "faster");
  EXPECT_EQ(Query("SELECT count(*) FROM confirmed_regressions")[0][0], 2);
}

// A noisy result (its median not known to target_ci) is judged and enters the baseline;
// its interval widens the noise it is judged against, so a change inside its own
// imprecision is no candidate.
TEST_F(RegressionTest, NoisyResultsAreJudgedWithTheirInterval) {
  Register("node-a");
  AnswerWithInterval(0.01, /*noisy=*/true);
  for (int night = 0; night < 12; ++night) Night(10.0 + 0.02 * (night % 3), [] { return 10.02; });
  EXPECT_EQ(Query("SELECT count(*) FROM regressions")[0][0], 0);
  // A 20% slowdown of a noisy but steady result: judged, confirmed.
  const int64_t slow = Night(12.0, [] { return 12.0; });
  ASSERT_FALSE(Regression(slow).is_null()) << "a noisy result is judged";
  EXPECT_EQ(Regression(slow)[0], "confirmed");
  EXPECT_EQ(Regression(slow)[3], 12) << "the noisy results were its baseline";
  // Back at 12 ms the series is quiet again; a 6% change whose own interval is +-10%
  // is within its imprecision: beyond min_change, but not beyond z.
  for (int night = 0; night < 12; ++night) Night(12.0 + 0.02 * (night % 3), [] { return 12.02; });
  AnswerWithInterval(0.10, /*noisy=*/true);
  const int64_t vague = Night(12.75, [] { return 12.75; });
  EXPECT_TRUE(Regression(vague).is_null()) << Regression(vague).dump();
  // The same change measured to +-0.5% is a candidate.
  AnswerWithInterval(0.005, /*noisy=*/false);
  const int64_t precise = Night(12.75, [] { return 12.75; });
  ASSERT_FALSE(Regression(precise).is_null());
  EXPECT_EQ(Regression(precise)[0], "confirmed");
  const json kept =
      Query("SELECT median_ci_low_ms, median_ci_high_ms FROM regressions WHERE job_id = " +
            std::to_string(precise));
  EXPECT_NEAR(kept[0][0].get<double>(), 12.75 * 0.995, 1e-9);
  EXPECT_NEAR(kept[0][1].get<double>(), 12.75 * 1.005, 1e-9);
}

// An unsteady result (its statistics may mix two regimes) is neither judged nor kept in
// a baseline.
TEST_F(RegressionTest, UnsteadyResultsAreNotJudged) {
  Register("node-a");
  for (int night = 0; night < 12; ++night) Night(10.0, [] { return 10.0; });
  Submit(kNightly);
  coordinator_->Tick();
  const Sent* offer = LastTo("node-a/1", "job");
  ASSERT_NE(offer, nullptr);
  const json body = offer->message.body;
  json result = GoodResult(body["spec"]);
  result["stats"]["median_ms"] = 20.0;
  result["stats"]["unsteady"] = true;
  result["stats"]["noisy"] = true;
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "result"},
                         {"job_id", body["job_id"]},
                         {"attempt", body["attempt"]},
                         {"result", result}});
  coordinator_->Tick();
  EXPECT_TRUE(Regression(body["job_id"].get<int64_t>()).is_null());
}

}  // namespace
}  // namespace benchfleet
