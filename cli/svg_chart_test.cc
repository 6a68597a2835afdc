#include "cli/svg_chart.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(EscapeXml, EscapesMarkupAndDropsControlCharacters) {
  EXPECT_EQ(EscapeXml("<script>alert(\"x\") & 'y'</script>"),
            "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;");
  EXPECT_EQ(EscapeXml(std::string("a\x01"
                                  "b\x1b"
                                  "c",
                                  5)),
            "abc");
  EXPECT_EQ(EscapeXml("h\u00f6st"), "h\u00f6st");  // UTF-8 passes
}

TEST(LineChart, HasTitledAxesALegendAndOnePointPerValue) {
  LineChart chart{
      "throughput-mlp",
      {"batch size (samples)", AxisScale::kLog},
      {"throughput (samples/s)"},
      {{"<b>evil</b> host", {{1, 10}, {8, 70}, {64, 400}}}, {"second", {{1, 12}, {64, 500}}}}};
  const std::string svg = RenderLineChart(chart);
  EXPECT_NE(svg.find("data-chart=\"throughput-mlp\""), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"point\""), 5u);
  EXPECT_NE(svg.find(">batch size (samples)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">throughput (samples/s)</text>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;b&gt;evil&lt;/b&gt; host"), std::string::npos);  // the legend, escaped
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("http"), std::string::npos) << "no URL, not even a namespace";
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
}

TEST(LineChart, AnIntervalIsAnErrorBarWithinTheFrame) {
  ChartPoint with{1, 10};
  with.y_low = 9.5;
  with.y_high = 40;  // above every point: the frame must grow to hold it
  LineChart chart{"history", {"x"}, {"median (ms)"}, {{"s", {with, {2, 11}, {3, 12}}}}};
  const std::string svg = RenderLineChart(chart);
  EXPECT_EQ(Count(svg, "class=\"error-bar\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"point\""), 3u);
  // The y axis reaches 40: a tick at or above it.
  EXPECT_NE(svg.find(">40</text>"), std::string::npos) << svg;
}

TEST(LineChart, LeavesOutValuesALogAxisCannotShowAndMarksRegressions) {
  LineChart chart{"history",
                  {"received (UTC)", AxisScale::kTime},
                  {"median (ms)", AxisScale::kLog},
                  {{"s", {{1.7e9, 2}, {1.7e9 + 60, 0}, {1.7e9 + 120, 3, PointMark::kRegression}}}}};
  const std::string svg = RenderLineChart(chart);
  EXPECT_EQ(Count(svg, "class=\"point\""), 2u);
  EXPECT_EQ(Count(svg, "class=\"mark\""), 2u);  // the ring and its legend swatch
  EXPECT_NE(svg.find("confirmed regression"), std::string::npos);
}

TEST(LineChart, IdealDiagonalIsDashedAndNamed) {
  LineChart chart{
      "threads", {"threads (count)"}, {"speedup (x)"}, {{"a", {{1, 1}, {2, 1.8}, {4, 3.1}}}}};
  chart.ideal_diagonal = true;
  const std::string svg = RenderLineChart(chart);
  EXPECT_NE(svg.find("class=\"ideal\""), std::string::npos);
  EXPECT_NE(svg.find("ideal (linear)"), std::string::npos);
}

TEST(BarChart, OneRectPerBarWithNotesAndReference) {
  BarChart chart{"dtype-speedup",
                 "speedup over fp32 (x)",
                 {"host & model", "other"},
                 {"int8", "bf16"},
                 {{0, 0, 2.5, "2.5x, max err 0.01"}, {0, 1, 1.2, ""}, {1, 0, 0.8, ""}},
                 1.0,
                 "1x: as fast as fp32"};
  const std::string svg = RenderBarChart(chart);
  EXPECT_EQ(Count(svg, "<rect class=\"point\""), 3u);
  EXPECT_NE(svg.find("host &amp; model"), std::string::npos);
  EXPECT_NE(svg.find(">speedup over fp32 (x)</text>"), std::string::npos);
  EXPECT_NE(svg.find("2.5x, max err 0.01"), std::string::npos);
  EXPECT_NE(svg.find("1x: as fast as fp32"), std::string::npos);
}

TEST(Ticks, LinearTicksAreRoundAndLogTicksPerDecade) {
  EXPECT_EQ(LinearTicks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(LogTicks(1, 100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(LogTicks(1, 1e6), (std::vector<double>{1, 10, 100, 1e3, 1e4, 1e5, 1e6}));
}

}  // namespace
}  // namespace benchfleet
