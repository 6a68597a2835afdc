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
    return [this](const std::string& sql) -> StatusOr<json> {
      queries.push_back(sql);
      for (const std::string from :
           {"cpu_gpu_speedup", "parallel_scaling", "thread_scaling", "dtype_comparison",
            "result_summary", "WITH chosen", "FROM sweeps"}) {
        if (sql.find(from) == std::string::npos) continue;
        json body = {{"columns", json::array()}, {"rows", json::array()}};
        const auto& rows = tables_[from];
        if (rows.empty()) return body;
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
        return body;
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

}  // namespace
}  // namespace benchfleet
