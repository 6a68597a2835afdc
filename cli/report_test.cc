#include "cli/report.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace benchfleet {
namespace {

using nlohmann::json;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The text of the <svg data-chart="NAME"> element; empty when absent.
std::string Chart(const std::string& html, const std::string& name) {
  const size_t start = html.find("<svg data-chart=\"" + name + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</svg>", start) - start);
}

// A store the coordinator would answer from: the rows of the first table or view the
// statement reads FROM, as the coordinator's reply body.
class FakeStore {
 public:
  void Add(const std::string& from, json row) { tables_[from].push_back(std::move(row)); }
  ReportQuery Query() {
    return [this](const std::string& sql) -> StatusOr<RowsReply> {
      queries.push_back(sql);
      for (const std::string from :
           {"result_capacity", "cpu_gpu_speedup", "parallel_scaling", "thread_scaling",
            "dtype_comparison", "result_summary", "WITH chosen", "FROM sweeps"}) {
        if (sql.find(from) == std::string::npos) continue;
        json body = {{"columns", json::array()}, {"rows", json::array()}, {"truncated", false}};
        const auto& rows = tables_[from];
        if (rows.empty()) return RowsReply::FromJson(body);
        std::set<std::string> columns;  // every key of any row; absent ones are NULL
        for (const json& row : rows) {
          for (const auto& [key, value] : row.items()) columns.insert(key);
        }
        for (const std::string& column : columns) body["columns"].push_back(column);
        for (const json& row : rows) {
          json values = json::array();
          for (const auto& column : body["columns"])
            values.push_back(row.value(column.get<std::string>(), json()));
          body["rows"].push_back(values);
        }
        return RowsReply::FromJson(body);
      }
      return InvalidArgument("unexpected statement: " + sql);
    };
  }
  std::vector<std::string> queries;

 private:
  std::map<std::string, std::vector<json>> tables_;
};

TEST(Report, MissingSweepIsNotFound) {
  FakeStore store;
  ReportOptions options;
  options.sweep = 999;
  auto html = BuildReport(store.Query(), options);
  ASSERT_FALSE(html.ok());
  EXPECT_EQ(html.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(html.status().message(), "sweep 999 does not exist");
}

TEST(Report, MalformedSinceIsInvalidArgument) {
  FakeStore store;
  ReportOptions options;
  options.since = "a week";
  EXPECT_EQ(BuildReport(store.Query(), options).status().code(), StatusCode::kInvalidArgument);
}

TEST(Report, SpeedupParallelAndRegressionsAreDrawnAndPeerTextEscaped) {
  FakeStore store;
  store.Add("FROM sweeps", {{"sweep_id", 7},
                            {"name", "night<script>"},
                            {"labels", R"({"commit":"a\"b<"})"},
                            {"state", "done"},
                            {"created_at", "2026-12-01T02:00:00.000Z"}});
  for (const char* device : {"cuda:0", "cuda:1"}) {
    store.Add("cpu_gpu_speedup", {{"host", "gpu<1>"},
                                  {"model", "mlp"},
                                  {"mode", "inference"},
                                  {"dtype", "fp32"},
                                  {"batch_size", 32},
                                  {"cpu_threads", 8},
                                  {"gpu_device", device},
                                  {"speedup", 12.5},
                                  {"cpu_median_ms", 10.0},
                                  {"gpu_median_ms", 0.8}});
  }
  for (int world : {2, 4}) {
    store.Add("parallel_scaling", {{"host_set", "a,b"},
                                   {"model", "mlp"},
                                   {"kind", "data"},
                                   {"world_size", world},
                                   {"batch_size", 64},
                                   {"efficiency", 0.9 / world * 2},
                                   {"comm_share", 0.2}});
  }
  store.Add("WITH chosen", {{"series", "s1"},
                            {"host", "gpu<1>"},
                            {"device", "cpu"},
                            {"model", "mlp"},
                            {"mode", "inference"},
                            {"dtype", "fp32"},
                            {"batch_size", 1},
                            {"threads", 1},
                            {"received_at", "2026-11-30T02:00:00.000Z"},
                            {"median_ms", 1.0},
                            {"job_id", 1}});
  store.Add("WITH chosen", {{"series", "s1"},
                            {"host", "gpu<1>"},
                            {"device", "cpu"},
                            {"model", "mlp"},
                            {"mode", "inference"},
                            {"dtype", "fp32"},
                            {"batch_size", 1},
                            {"threads", 1},
                            {"received_at", "2026-12-01T02:00:00.000Z"},
                            {"median_ms", 1.5},
                            {"job_id", 2},
                            {"direction", "slower"},
                            {"change_pct", 50.0}});
  ReportOptions options;
  options.sweep = 7;
  auto html = BuildReport(store.Query(), options);
  ASSERT_TRUE(html.ok()) << html.status().message();

  EXPECT_EQ(Count(Chart(*html, "cpu-gpu-speedup"), "<rect class=\"point\""), 2u);
  EXPECT_NE(Chart(*html, "cpu-gpu-speedup").find("cuda:1"), std::string::npos)
      << "the legend names each GPU";
  EXPECT_EQ(Count(Chart(*html, "parallel-efficiency"), "class=\"point\""), 2u);
  const std::string history = Chart(*html, "history");
  EXPECT_EQ(Count(history, "class=\"point\""), 2u);
  EXPECT_NE(history.find("confirmed regression"), std::string::npos);
  EXPECT_NE(html->find("slower 50.0%"), std::string::npos);  // the table's confirmed change

  // What peers wrote is text, never markup.
  EXPECT_EQ(html->find("<script"), std::string::npos);
  EXPECT_EQ(html->find("gpu<1>"), std::string::npos);
  EXPECT_NE(html->find("gpu&lt;1&gt;"), std::string::npos);
  EXPECT_NE(html->find("commit=a&quot;b&lt;"), std::string::npos);

  // Sections without data say so, without a chart.
  EXPECT_NE(html->find("no single-process results with a throughput in this range"),
            std::string::npos);
  EXPECT_NE(html->find("no int8/bf16 results with an fp32 counterpart in this range"),
            std::string::npos);
  EXPECT_EQ(Chart(*html, "dtype-speedup"), "");
  // Every statement reads only the report's sweeps.
  for (const std::string& sql : store.queries) {
    if (sql.find("FROM sweeps") == std::string::npos ||
        sql.find("WITH chosen") != std::string::npos) {
      EXPECT_NE(sql.find("IN (7)"), std::string::npos) << sql;
    }
  }
}

// The section between `<h2>TITLE` and the next </section>; empty when absent.
std::string SectionText(const std::string& html, const std::string& title) {
  const size_t start = html.find("<h2>" + title);
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</section>", start) - start);
}

TEST(Report, RecommendationPerModelMarksTheBestAndDropsDominatedRows) {
  FakeStore store;
  store.Add("FROM sweeps",
            {{"sweep_id", 3}, {"name", "night"}, {"labels", "{}"}, {"state", "done"}});
  auto candidate = [](int job, const std::string& host, const std::string& dtype, int threads,
                      double throughput, double p99, json loss) {
    return json{{"job_id", job},
                {"host", host},
                {"model", "mlp"},
                {"device", "cpu"},
                {"dtype", dtype},
                {"scenario", "offline"},
                {"threads", threads},
                {"batch_size", 64},
                {"replicas", 1},
                {"capacity_per_s", throughput},
                {"latency_p99_ms", p99},
                {"accuracy_loss", loss},
                {"noisy", 0},
                {"stale", 0}};
  };
  store.Add("result_capacity", candidate(1, "box<1>", "fp32", 2, 1000, 5, 0));
  store.Add("result_capacity", candidate(2, "box<1>", "fp32", 1, 500, 8, 0));  // dominated by job 1
  json int8 = candidate(3, "box<1>", "int8", 2, 3000, 3, 0.02);
  int8["stale"] = 1;
  store.Add("result_capacity", int8);
  ReportOptions options;
  options.sweep = 3;
  auto html = BuildReport(store.Query(), options);
  ASSERT_TRUE(html.ok()) << html.status().message();

  const std::string section = SectionText(*html, "Recommendation: mlp");
  ASSERT_FALSE(section.empty()) << *html;
  EXPECT_EQ(Count(section, "<tr>"), 3u) << "a heading and the two Pareto rows: " << section;
  EXPECT_EQ(Count(section, "<td>best</td>"), 1u) << section;
  EXPECT_NE(section.find("<td>best</td><td class=\"num\">3</td>"), std::string::npos)
      << "the int8 run has the most throughput: " << section;
  EXPECT_NE(section.find("stale"), std::string::npos) << "its row is flagged and warned about";
  EXPECT_NE(section.find("<p class=\"warning\">box&lt;1&gt;: job 3"), std::string::npos) << section;
  EXPECT_EQ(section.find("box<1>"), std::string::npos) << "a host name is text, never markup";
  for (const std::string& sql : store.queries) {
    if (sql.find("result_capacity") != std::string::npos) {
      EXPECT_NE(sql.find("IN (3)"), std::string::npos) << sql;
    }
  }
}

TEST(Report, NoInferenceResultsSaySoInTheRecommendationSection) {
  FakeStore store;
  store.Add("FROM sweeps",
            {{"sweep_id", 4}, {"name", "empty"}, {"labels", "{}"}, {"state", "done"}});
  ReportOptions options;
  options.sweep = 4;
  auto html = BuildReport(store.Query(), options);
  ASSERT_TRUE(html.ok()) << html.status().message();
  EXPECT_NE(html->find("no inference results in this range"), std::string::npos);
}

}  // namespace
}  // namespace benchfleet
