// cli/ci_output.h: JUnit XML and Markdown for CI, and the counts behind --fail-on.
#include "cli/ci_output.h"

#include <gtest/gtest.h>

#include "cli/format.h"

namespace benchfleet {
namespace {

using json = nlohmann::json;

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

RowsReply Compared(const std::vector<std::string>& changes) {
  RowsReply reply;
  reply.columns = {"host",  "device",     "model",   "model_args",  "mode",
                   "dtype", "batch_size", "threads", "a_median_ms", "b_median_ms",
                   "ratio", "p",          "change",  "a_samples",   "b_samples"};
  int batch = 1;
  for (const std::string& change : changes) {
    reply.rows.push_back(json::array({"node-a", "cpu", "mlp", "", "inference", "fp32", batch++, 2,
                                      10.0, 13.0, 1.3, 1e-9, change, 30, 30}));
  }
  return reply;
}

TEST(CiOutputTest, ConfigurationNamesEveryPartOfTheConfiguration) {
  EXPECT_EQ(ConfigurationName({{"host", "node-a"},
                               {"device", "cuda:0"},
                               {"model", "mlp"},
                               {"model_args", ""},
                               {"mode", "inference"},
                               {"dtype", "bf16"},
                               {"batch_size", 32},
                               {"threads", 4}}),
            "mlp inference bf16 batch 32 threads 4 cuda:0 on node-a");
  EXPECT_EQ(ConfigurationName({{"host", "h"},
                               {"device", "cpu"},
                               {"model", "mlp"},
                               {"model_args", "{\"layers\":[8]}"},
                               {"mode", "training"},
                               {"dtype", "fp32"},
                               {"batch_size", 1},
                               {"threads", 1}}),
            "mlp {\"layers\":[8]} training fp32 batch 1 threads 1 cpu on h");
}

TEST(CiOutputTest, AFailedPairIsCountedAsFailedNotAsWithoutSamples) {
  const ChangeCounts counts = CountChanges(Compared({"slower", "failed", "unchanged"}));
  EXPECT_EQ(counts.failed, 1);
  EXPECT_EQ(counts.unjudged, 0);
  EXPECT_EQ(ChangeSummary(counts), "1 slower, 0 faster, 1 unchanged, 1 failed");
}

TEST(CiOutputTest, CompareJunitFailsTheSlowerConfigurationOnly) {
  const RowsReply compared = Compared({"unchanged", "slower", "faster", "no samples"});
  const ChangeCounts counts = CountChanges(compared);
  EXPECT_EQ(counts.slower, 1);
  EXPECT_EQ(counts.faster, 1);
  EXPECT_EQ(counts.unchanged, 1);
  EXPECT_EQ(counts.unjudged, 1);
  EXPECT_EQ(ChangeSummary(counts), "1 slower, 1 faster, 1 unchanged, 1 without samples");
  const std::string xml = CompareJunit(compared, 3, 4);
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n", 0), 0u) << xml;
  EXPECT_NE(
      xml.find("<testsuite name=\"benchfleet compare 3 4\" tests=\"4\" failures=\"1\" errors=\"0\" "
               "skipped=\"1\">"),
      std::string::npos)
      << xml;
  EXPECT_EQ(Occurrences(xml, "<testcase "), 4u);
  EXPECT_EQ(Occurrences(xml, "<failure "), 1u);
  // The failure belongs to batch 2, the slower one.
  const size_t slower = xml.find("name=\"mlp inference fp32 batch 2 threads 2 cpu on node-a\"");
  ASSERT_NE(slower, std::string::npos) << xml;
  EXPECT_EQ(xml.find("<failure "), xml.find('\n', slower) + 7) << xml;
  EXPECT_NE(xml.find("<skipped message=\"no samples\"/>"), std::string::npos) << xml;
}

TEST(CiOutputTest, JunitTextIsEscaped) {
  const std::string xml =
      JunitXml("a <suite> & \"more\"",
               {{"x<y & 'z'", "c", std::string("5% > 1"), std::nullopt, "a < b\x01"}});
  EXPECT_NE(xml.find("name=\"a &lt;suite&gt; &amp; &quot;more&quot;\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"x&lt;y &amp; &#39;z&#39;\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"5% &gt; 1\">a &lt; b</failure>"), std::string::npos)
      << xml;
}

TEST(CiOutputTest, RegressionsJunitFailsRegressionsAndPassesImprovements) {
  RowsReply confirmed;
  confirmed.columns = {"decided_at", "host",       "model",     "mode",
                       "dtype",      "batch_size", "threads",   "device",
                       "direction",  "change_pct", "median_ms", "baseline_median_ms",
                       "job_id"};
  confirmed.rows = {json::array({"2024-05-02T00:00:00Z", "h", "mlp", "inference", "fp32", 32, 1,
                                 "cpu", "slower", 15.2, 11.5, 10.0, 40}),
                    json::array({"2024-05-01T00:00:00Z", "h", "mlp", "inference", "fp32", 1, 1,
                                 "cpu", "faster", -20.0, 8.0, 10.0, 41})};
  EXPECT_EQ(CountRegressions(confirmed), 1);
  const std::string xml = RegressionsJunit(confirmed, "24h");
  EXPECT_NE(xml.find("name=\"benchfleet regressions since 24h\" tests=\"2\" failures=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"confirmed regression: 15.20% slower\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase name=\"mlp inference fp32 batch 1 threads 1 cpu on h\" "
                     "classname=\"benchfleet.regressions\"/>"),
            std::string::npos)
      << xml;
  confirmed.rows.erase(confirmed.rows.begin());
  EXPECT_EQ(CountRegressions(confirmed), 0);
}

TEST(CiOutputTest, MarkdownIsAPipeTable) {
  const std::string md = FormatRows(
      {"host", "median_ms", "note"},
      json::array({json::array({"a|b", 1.5, "two\nlines"}), json::array({"c", 20.25, nullptr})}),
      RowFormat::kMarkdown);
  EXPECT_EQ(md,
            "| host | median_ms | note |\n"
            "| --- | ---: | --- |\n"
            "| a\\|b | 1.500 | two<br>lines |\n"
            "| c | 20.25 |  |\n");
  EXPECT_EQ(*ParseRowFormat("markdown"), RowFormat::kMarkdown);
  EXPECT_EQ(*ParseRowFormat("junit"), RowFormat::kJunit);
}

}  // namespace
}  // namespace benchfleet
