#include "metrics/exposition_writer.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

namespace benchfleet {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ExpositionWriterTest, AFamilyIsItsHelpItsTypeAndItsSamples) {
  ExpositionWriter out;
  out.GaugesByLabel("x_agents", "Agents by state.", "state", {{"idle", 2}, {"busy", 1}});
  out.Counter("x_jobs_total", "Jobs.", 7, {{"outcome", "ok"}, {"where", "here"}});
  out.Gauge("x_start_time_seconds", "When it started.", 1700000000.5);
  EXPECT_EQ(Lines(out.text()), (std::vector<std::string>{
                                   "# HELP x_agents Agents by state.",
                                   "# TYPE x_agents gauge",
                                   "x_agents{state=\"busy\"} 1",
                                   "x_agents{state=\"idle\"} 2",
                                   "# HELP x_jobs_total Jobs.",
                                   "# TYPE x_jobs_total counter",
                                   "x_jobs_total{outcome=\"ok\",where=\"here\"} 7",
                                   "# HELP x_start_time_seconds When it started.",
                                   "# TYPE x_start_time_seconds gauge",
                                   "x_start_time_seconds 1700000000.5",
                               }));
}

TEST(ExpositionWriterTest, HistogramBucketsAreCumulative) {
  LatencyHistogram histogram;
  histogram.Record(0.00005);  // <= 0.0001
  histogram.Record(0.0001);   // on a bound: that bucket (le is <=)
  histogram.Record(0.003);    // <= 0.005
  histogram.Record(30);       // past every bound: +Inf only
  ExpositionWriter out;
  out.Histogram("x_seconds", "How long.", histogram);
  const auto lines = Lines(out.text());
  ASSERT_EQ(lines.size(), 2 + kLatencyBucketBoundsS.size() + 1 + 2);
  EXPECT_EQ(lines[1], "# TYPE x_seconds histogram");
  const std::vector<std::string> expected = {"x_seconds_bucket{le=\"0.0001\"} 2",
                                             "x_seconds_bucket{le=\"0.00025\"} 2",
                                             "x_seconds_bucket{le=\"0.0005\"} 2",
                                             "x_seconds_bucket{le=\"0.001\"} 2",
                                             "x_seconds_bucket{le=\"0.0025\"} 2",
                                             "x_seconds_bucket{le=\"0.005\"} 3",
                                             "x_seconds_bucket{le=\"0.01\"} 3",
                                             "x_seconds_bucket{le=\"0.025\"} 3",
                                             "x_seconds_bucket{le=\"0.05\"} 3",
                                             "x_seconds_bucket{le=\"0.1\"} 3",
                                             "x_seconds_bucket{le=\"0.25\"} 3",
                                             "x_seconds_bucket{le=\"0.5\"} 3",
                                             "x_seconds_bucket{le=\"1\"} 3",
                                             "x_seconds_bucket{le=\"2.5\"} 3",
                                             "x_seconds_bucket{le=\"5\"} 3",
                                             "x_seconds_bucket{le=\"10\"} 3",
                                             "x_seconds_bucket{le=\"+Inf\"} 4",
                                             "x_seconds_sum 30.00315",
                                             "x_seconds_count 4"};
  EXPECT_EQ(std::vector<std::string>(lines.begin() + 2, lines.end()), expected);
}

TEST(ExpositionWriterTest, LabelValuesAndHelpAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  ExpositionWriter out;
  out.Gauge("x", "a \"quoted\" \\ help\nline", 1.0, {{"requirement", "{m: \"H100\\80GB\"\nx}"}});
  EXPECT_EQ(Lines(out.text()),
            (std::vector<std::string>{"# HELP x a \"quoted\" \\\\ help\\nline", "# TYPE x gauge",
                                      "x{requirement=\"{m: \\\"H100\\\\80GB\\\"\\nx}\"} 1"}));
}

TEST(ExpositionWriterTest, SampleValuesAsPrometheusWritesThem) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(0.0001), "0.0001");
  EXPECT_EQ(FormatSampleValue(2.5), "2.5");
  EXPECT_EQ(FormatSampleValue(10), "10");
  EXPECT_EQ(FormatSampleValue(1700000000.5), "1700000000.5");
  EXPECT_EQ(FormatSampleValue(0.00001), "1e-05");
  EXPECT_EQ(FormatSampleValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatSampleValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatSampleValue(0.0 / 0.0), "NaN");
}

}  // namespace
}  // namespace benchfleet
