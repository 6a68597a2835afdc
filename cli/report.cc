#include "cli/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <set>

#include "cli/format.h"
#include "cli/queries.h"
#include "cli/recommend.h"
#include "cli/report_page.h"
#include "cli/svg_chart.h"
#include "common/files.h"
#include "common/messages.h"

namespace benchfleet {
namespace {

using nlohmann::json;

using namespace report_page;

// History: the series with confirmed regressions first, then the longest.
constexpr size_t kMaxHistorySeries = 12;
// Bars in one bar chart (categories); the rest stay in the table.
constexpr size_t kMaxBarCategories = 40;

class Report {
 public:
  Report(const ReportQuery& query, std::vector<int64_t> sweep_ids)
      : query_(query), sweeps_(std::move(sweep_ids)) {}

  StatusOr<std::vector<json>> Rows(const std::string& sql) {
    auto rows = query_(sql);
    if (!rows.ok()) return rows.status();
    truncated_ |= rows->truncated;
    return rows->Objects();
  }

  // Whether a reply stopped at the row limit (kMaxReplyRows).
  bool truncated() const { return truncated_; }

  StatusOr<std::string> Throughput() {
    const char* title = "Throughput against batch size";
    auto rows = Rows(ReportThroughputSql(sweeps_));
    if (!rows.ok()) return rows.status();
    if (rows->empty())
      return Empty(title, "no single-process results with a throughput in this range");
    std::string out;
    for (const auto& [model, group] : ByModel(*rows)) {
      size_t all = 0;
      LineChart chart{
          ChartName("throughput", model),
          {"batch size (samples per iteration)", ScaleFor(Values(group, "batch_size"))},
          {"throughput (samples/s)", ScaleFor(Values(group, "throughput_per_s")), true},
          SeriesOf(
              group,
              [](const json& r) {
                return Join({Str(r, "host"), Str(r, "device"), Str(r, "model_args"), Str(r, "mode"),
                             Str(r, "dtype"), Str(r, "threads") + " thr"});
              },
              "batch_size", "throughput_per_s", &all)};
      if (chart.y.scale == AxisScale::kLog) chart.y.from_zero = false;
      const std::string shared = DropShared(&chart.series);
      out += Section(std::string(title) + ": " + model,
                     "Samples per second of " + model +
                         " at each batch size, one line per host, device, mode, "
                         "dtype and thread count (mean over the range's runs)." +
                         shared + Shown(chart.series.size(), all, "series"),
                     RenderLineChart(chart) + Table(group, {{"host", "host"},
                                                            {"device", "device"},
                                                            {"mode", "mode"},
                                                            {"dtype", "dtype"},
                                                            {"threads", "threads"},
                                                            {"batch_size", "batch"},
                                                            {"model_args", "model args"},
                                                            {"throughput_per_s", "samples/s"},
                                                            {"median_ms", "median ms"},
                                                            {"runs", "runs"}}));
    }
    return out;
  }

  StatusOr<std::string> Speedup() {
    const char* title = "CPU against GPU";
    auto rows = Rows(ReportSpeedupSql(sweeps_));
    if (!rows.ok()) return rows.status();
    if (rows->empty())
      return Empty(title, "no configuration ran on both cpu and cuda in this range");
    BarChart chart{
        "cpu-gpu-speedup", "GPU speedup over CPU (x, CPU median / GPU median)", {}, {}, {}, 1.0,
        "1x: equal speed"};
    std::map<std::string, size_t> categories, devices;
    for (const json& r : *rows) {
      const std::string category = Join(
          {Str(r, "host"), Str(r, "model"), Str(r, "model_args"), Str(r, "mode"), Str(r, "dtype"),
           "b=" + Str(r, "batch_size"), "cpu " + Str(r, "cpu_threads") + " thr"});
      if (!categories.count(category)) {
        if (categories.size() == kMaxBarCategories) continue;
        categories[category] = chart.categories.size();
        chart.categories.push_back(category);
      }
      const std::string device = Str(r, "gpu_device");
      if (!devices.count(device)) {
        devices[device] = chart.series.size();
        chart.series.push_back(device);
      }
      char note[32];
      snprintf(note, sizeof note, "%.3gx", Real(r, "speedup"));
      chart.bars.push_back({categories[category], devices[device], Real(r, "speedup"), note});
    }
    const std::string shared = DropShared(&chart.categories);
    return Section(title,
                   "How many times faster each GPU runs a configuration than the same host's CPU "
                   "(median time per "
                   "iteration, same model, mode, dtype and batch)." +
                       shared + Shown(chart.categories.size(), rows->size(), "configurations"),
                   RenderBarChart(chart) + Table(*rows, {{"host", "host"},
                                                         {"model", "model"},
                                                         {"mode", "mode"},
                                                         {"dtype", "dtype"},
                                                         {"batch_size", "batch"},
                                                         {"cpu_threads", "cpu threads"},
                                                         {"gpu_device", "gpu"},
                                                         {"cpu_median_ms", "cpu ms"},
                                                         {"gpu_median_ms", "gpu ms"},
                                                         {"speedup", "speedup x"}}));
  }

  StatusOr<std::string> Threads() {
    const char* title = "Thread scaling";
    auto rows = Rows(ReportThreadsSql(sweeps_));
    if (!rows.ok()) return rows.status();
    // Only series that start at one thread (so the speedup is over one thread and y = x is
    // ideal) and ran at more threads say anything about scaling.
    auto key = [](const json& r) {
      return Join({Str(r, "host"), Str(r, "device"), Str(r, "model_args"), Str(r, "mode"),
                   Str(r, "dtype"), "b=" + Str(r, "batch_size")});
    };
    std::map<std::string, std::pair<int, double>> series;  // count, fewest threads
    for (const json& r : *rows) {
      auto& [count, fewest] =
          series.try_emplace(Str(r, "model") + "\n" + key(r), 0, INFINITY).first->second;
      ++count;
      fewest = std::min(fewest, Real(r, "threads"));
    }
    std::vector<json> kept;
    for (const json& r : *rows) {
      const auto& [count, fewest] = series[Str(r, "model") + "\n" + key(r)];
      if (count > 1 && fewest == 1) kept.push_back(r);
    }
    if (kept.empty())
      return Empty(title, "no configuration ran at 1 thread and at more threads in this range");
    std::string out;
    for (const auto& [model, group] : ByModel(kept)) {
      size_t all = 0;
      LineChart chart{ChartName("threads", model),
                      {"intra-op threads (count)"},
                      {"speedup over 1 thread (x, 1-thread median / median)"},
                      SeriesOf(group, key, "threads", "speedup", &all)};
      chart.ideal_diagonal = true;
      const std::string shared = DropShared(&chart.series);
      out += Section(
          std::string(title) + ": " + model,
          "Speedup of " + model +
              " over its 1-thread time as threads grow, one line per host, device, "
              "mode, dtype and batch; the dashed line is perfect linear scaling." +
              shared + Shown(chart.series.size(), all, "series"),
          RenderLineChart(chart) + Table(group, {{"host", "host"},
                                                 {"device", "device"},
                                                 {"mode", "mode"},
                                                 {"dtype", "dtype"},
                                                 {"batch_size", "batch"},
                                                 {"threads", "threads"},
                                                 {"median_ms", "median ms"},
                                                 {"speedup", "speedup x"},
                                                 {"parallel_efficiency", "efficiency"},
                                                 {"effective_threads", "effective threads"}}));
    }
    return out;
  }

  StatusOr<std::string> Dtypes() {
    const char* title = "int8 and bf16 against fp32";
    auto rows = Rows(ReportDtypesSql(sweeps_));
    if (!rows.ok()) return rows.status();
    if (rows->empty())
      return Empty(title, "no int8/bf16 results with an fp32 counterpart in this range");
    BarChart chart{
        "dtype-speedup",      "speedup over fp32 (x, fp32 median / median)", {}, {}, {}, 1.0,
        "1x: as fast as fp32"};
    std::map<std::string, size_t> categories, dtypes;
    for (const json& r : *rows) {
      const std::string category =
          Join({Str(r, "host"), Str(r, "device"), Str(r, "model"), Str(r, "model_args"),
                Str(r, "mode"), "b=" + Str(r, "batch_size"), Str(r, "threads") + " thr"});
      if (!categories.count(category)) {
        if (categories.size() == kMaxBarCategories) continue;
        categories[category] = chart.categories.size();
        chart.categories.push_back(category);
      }
      const std::string dtype = Str(r, "dtype");
      if (!dtypes.count(dtype)) {
        dtypes[dtype] = chart.series.size();
        chart.series.push_back(dtype);
      }
      char note[64];
      const double err = Real(r, "max_abs_err");
      if (std::isfinite(err)) {
        snprintf(note, sizeof note, "%.3gx, max err %.2g", Real(r, "speedup"), err);
      } else {
        snprintf(note, sizeof note, "%.3gx", Real(r, "speedup"));
      }
      chart.bars.push_back({categories[category], dtypes[dtype], Real(r, "speedup"), note});
    }
    const std::string shared = DropShared(&chart.categories);
    return Section(title,
                   "How many times faster int8 and bf16 run than fp32 in the same configuration; "
                   "each bar names its "
                   "accuracy loss (largest absolute difference of the outputs from fp32's)." +
                       shared + Shown(chart.categories.size(), rows->size(), "configurations"),
                   RenderBarChart(chart) + Table(*rows, {{"host", "host"},
                                                         {"device", "device"},
                                                         {"model", "model"},
                                                         {"mode", "mode"},
                                                         {"batch_size", "batch"},
                                                         {"threads", "threads"},
                                                         {"dtype", "dtype"},
                                                         {"fp32_median_ms", "fp32 ms"},
                                                         {"median_ms", "ms"},
                                                         {"speedup", "speedup x"},
                                                         {"max_abs_err", "max abs err"},
                                                         {"rel_err", "rel err"},
                                                         {"top1_agreement", "top-1 agreement"}}));
  }

  StatusOr<std::string> Parallel() {
    const char* title = "Data- and model-parallel efficiency";
    // Data-parallel: throughput(N) / (N x throughput(1)); pipeline: the unsplit step
    // over the pipelined one, per rank.
    auto rows = Rows(ReportParallelSql(sweeps_));
    if (!rows.ok()) return rows.status();
    if (rows->empty())
      return Empty(title, "no data- or model-parallel results (world size > 1) in this range");
    for (json& r : *rows) {
      if (r["efficiency"].is_number()) r["efficiency_pct"] = r["efficiency"].get<double>() * 100;
    }
    size_t all = 0;
    LineChart chart{"parallel-efficiency",
                    {"world size (ranks)"},
                    {"parallel efficiency (% of linear)", AxisScale::kLinear, true},
                    SeriesOf(
                        *rows,
                        [](const json& r) {
                          return Join({Str(r, "model"), Str(r, "kind"), Str(r, "host_set"),
                                       "b=" + Str(r, "batch_size")});
                        },
                        "world_size", "efficiency_pct", &all)};
    const std::string shared = DropShared(&chart.series);
    return Section(title,
                   "Efficiency of jobs of several ranks: data-parallel throughput over N x one "
                   "rank's, pipeline "
                   "speedup over the unsplit model per rank; 100% is linear." +
                       shared + Shown(chart.series.size(), all, "series"),
                   RenderLineChart(chart) + Table(*rows, {{"model", "model"},
                                                          {"kind", "kind"},
                                                          {"host_set", "hosts"},
                                                          {"batch_size", "batch"},
                                                          {"world_size", "world size"},
                                                          {"efficiency_pct", "efficiency %"},
                                                          {"comm_share", "comm share"},
                                                          {"samples_per_s", "samples/s"},
                                                          {"median_ms", "median ms"},
                                                          {"bubble", "bubble"}}));
  }

  // `benchfleet recommend` for each model of the range, by throughput and without
  // constraints: per host its best configuration and the Pareto set it was chosen from,
  // each row citing its job.
  StatusOr<std::string> Recommendations() {
    const char* title = "Recommendation";
    auto rows = query_(CandidatesOfSweepsSql(sweeps_));
    if (!rows.ok()) return rows.status();
    truncated_ |= rows->truncated;
    std::map<std::string, std::vector<Candidate>> by_model;
    for (Candidate& c : CandidatesFrom(*rows)) by_model[c.model].push_back(std::move(c));
    if (by_model.empty()) return Empty(title, "no inference results in this range");
    std::string out;
    for (const auto& [model, candidates] : by_model) {
      std::vector<json> rows;
      std::string warnings;
      for (const HostRecommendation& r : Recommend(candidates, RecommendOptions{})) {
        for (const Candidate& c : r.pareto) {
          json row = CandidateJson(c);
          row["host"] = r.host;
          row["choice"] = r.best && r.best->job_id == c.job_id ? "best" : "";
          row["flags"] = Join({c.noisy ? "noisy" : "", c.stale ? "stale" : ""});
          rows.push_back(std::move(row));
        }
        for (const std::string& w : r.warnings) {
          warnings += "<p class=\"warning\">" + EscapeXml(r.host + ": " + w) + "</p>\n";
        }
      }
      out +=
          Section(std::string(title) + ": " + model,
                  "Per host, the configurations of " + model +
                      " no other beats on throughput, p99 latency, accuracy loss and cost at once "
                      "(the Pareto set), the one with the most throughput marked best; "
                      "benchfleet recommend --model " +
                      model + " applies an SLO, an accuracy limit or another criterion.",
                  warnings + Table(rows, {{"host", "host"},
                                          {"choice", "choice"},
                                          {"job_id", "job"},
                                          {"device", "device"},
                                          {"dtype", "dtype"},
                                          {"threads", "threads"},
                                          {"batch_size", "batch"},
                                          {"replicas", "replicas"},
                                          {"scenario", "scenario"},
                                          {"throughput_per_s", "samples/s"},
                                          {"p99_ms", "p99 ms"},
                                          {"accuracy_loss", "accuracy loss"},
                                          {"cost_per_1m_samples", "cost per 1M"},
                                          {"currency", "currency"},
                                          {"flags", "flags"}}));
    }
    return out;
  }

  StatusOr<std::string> History(std::optional<int64_t> within_s) {
    const char* title = "History of each series";
    auto rows = Rows(ReportHistorySql(sweeps_, within_s, kMaxHistorySeries));
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return Empty(title, "no series history in this range");
    LineChart chart{
        "history", {"received (UTC)", AxisScale::kTime}, {"median time per iteration (ms)"}, {}};
    std::map<std::string, size_t> index;
    std::vector<double> medians;
    size_t marked = 0;
    for (json& r : *rows) {
      const std::string series = Str(r, "series");
      if (!index.count(series)) {
        index[series] = chart.series.size();
        chart.series.push_back({Join({Str(r, "host"), Str(r, "device"), Str(r, "model"),
                                      Str(r, "model_args"), Str(r, "mode"), Str(r, "dtype"),
                                      "b=" + Str(r, "batch_size"), Str(r, "threads") + " thr"}),
                                {}});
      }
      const std::string direction = Str(r, "direction");
      const PointMark mark = direction == "slower"   ? PointMark::kRegression
                             : direction == "faster" ? PointMark::kImprovement
                                                     : PointMark::kNone;
      marked += mark != PointMark::kNone;
      r["confirmed"] = direction.empty() ? "" : direction + " " + Str(r, "change_pct") + "%";
      medians.push_back(Real(r, "median_ms"));
      const bool interval = r["median_ci_low_ms"].is_number() && r["median_ci_high_ms"].is_number();
      r["interval"] =
          interval ? FormatCell(r["median_ci_low_ms"]) + " - " + FormatCell(r["median_ci_high_ms"])
                   : "";
      ChartPoint point{ParseUtc(Str(r, "received_at")), Real(r, "median_ms"), mark,
                       Str(r, "received_at") + " job " + Str(r, "job_id") + ": " +
                           FormatCell(r["median_ms"]) + " ms" +
                           (interval ? " (95% interval " + Str(r, "interval") + " ms)" : "")};
      if (interval) {
        point.y_low = Real(r, "median_ci_low_ms");
        point.y_high = Real(r, "median_ci_high_ms");
      }
      chart.series[index[series]].points.push_back(std::move(point));
    }
    chart.y.scale = ScaleFor(medians);
    const std::string shared = DropShared(&chart.series);
    return Section(title,
                   "Median time per iteration of each series (one configuration on one host "
                   "fingerprint) over time, each with its 95% confidence interval as an error "
                   "bar: " +
                       std::to_string(chart.series.size()) +
                       " series, those with confirmed regressions first, then the longest; " +
                       std::to_string(marked) + " confirmed regression(s)/improvement(s) ringed." +
                       shared,
                   RenderLineChart(chart) + Table(*rows, {{"host", "host"},
                                                          {"device", "device"},
                                                          {"model", "model"},
                                                          {"mode", "mode"},
                                                          {"dtype", "dtype"},
                                                          {"batch_size", "batch"},
                                                          {"threads", "threads"},
                                                          {"received_at", "received"},
                                                          {"sweep_id", "sweep"},
                                                          {"job_id", "job"},
                                                          {"median_ms", "median ms"},
                                                          {"interval", "95% interval ms"},
                                                          {"confirmed", "confirmed change"}}));
  }

 private:
  const ReportQuery& query_;
  std::vector<int64_t> sweeps_;  // the range's sweeps
  bool truncated_ = false;
};

// The sweeps table of the header: id, name, state, times and labels (a JSON object of
// strings; shown as key=value, each escaped).
std::string SweepsTable(const std::vector<json>& sweeps) {
  std::vector<json> rows;
  for (const json& s : sweeps) {
    json row = s;
    std::string labels;
    const json parsed = json::parse(Str(s, "labels"), nullptr, false);
    if (parsed.is_object()) {
      for (const auto& [key, value] : parsed.items()) {
        labels += (labels.empty() ? "" : ", ") + key + "=" +
                  (value.is_string() ? value.get<std::string>() : value.dump());
      }
    } else {
      labels = Str(s, "labels");
    }
    row["labels_text"] = labels;
    rows.push_back(std::move(row));
  }
  return Table(rows, {{"sweep_id", "sweep"},
                      {"name", "name"},
                      {"labels_text", "labels"},
                      {"state", "state"},
                      {"created_at", "created"},
                      {"finished_at", "finished"}});
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1000px}"
    "h1{font-size:22px}h2{font-size:17px;margin:28px 0 4px}"
    "p.caption{margin:0 0 8px;color:#444}p.empty{color:#666;font-style:italic}p.warning{color:#a00}"
    "table{border-collapse:collapse;font-size:12px;margin:8px 0 16px}"
    "th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}td.num{text-align:right}"
    "th{background:#f2f2f2}svg{display:block;border:1px solid #ddd}";

}  // namespace

StatusOr<std::string> BuildReport(const ReportQuery& query, const ReportOptions& options) {
  std::string range, sweeps_sql;
  std::optional<int64_t> within_s;  // a range of --since; none for one sweep
  if (options.sweep) {
    range = "sweep " + std::to_string(*options.sweep);
    sweeps_sql = ReportSweepSql(*options.sweep);
  } else {
    auto seconds = ParseAge(options.since);
    if (!seconds.ok()) return seconds.status();
    range = "the last " + options.since;
    within_s = static_cast<int64_t>(*seconds);
    sweeps_sql = ReportSweepsWithinSql(*within_s);
  }
  auto rows = query(sweeps_sql);
  if (!rows.ok()) return rows.status();
  const std::vector<json> sweeps = rows->Objects();
  if (options.sweep && sweeps.empty()) {
    return NotFound("sweep " + std::to_string(*options.sweep) + " does not exist");
  }
  std::vector<int64_t> sweep_ids;
  for (const json& s : sweeps) sweep_ids.push_back(s.at("sweep_id").get<int64_t>());

  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>benchfleet "
      "report: " +
      EscapeXml(range) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>benchfleet report: " + EscapeXml(range) + "</h1>\n<p class=\"caption\">Generated " +
          NowUtc() + "; " + std::to_string(sweeps.size()) + " sweep(s) covered.</p>\n";
  html += sweeps.empty() ? "<p class=\"empty\">no sweeps in this range</p>\n" : SweepsTable(sweeps);
  Report report(query, std::move(sweep_ids));
  std::string sections;
  for (auto section : {&Report::Throughput, &Report::Speedup, &Report::Threads, &Report::Dtypes,
                       &Report::Parallel, &Report::Recommendations}) {
    auto text = (report.*section)();
    if (!text.ok()) return text.status();
    sections += *text;
  }
  auto history = report.History(within_s);
  if (!history.ok()) return history.status();
  sections += *history;
  if (report.truncated()) {
    html +=
        "<p class=\"warning\">Some sections stop at the row limit: narrow the "
        "range.</p>\n";
  }
  return html + sections + "</body>\n</html>\n";
}

int ReportCommand(Reads& reads, const ReportOptions& options) {
  auto fail = [](const Status& status) {
    std::cerr << "benchfleet: " << status.message() << "\n";
    return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
  };
  if (options.out.empty()) return fail(InvalidArgument("report needs --out FILE"));
  if (!options.sweep) {
    auto seconds = ParseAge(options.since);  // before connecting: bad input exits 2
    if (!seconds.ok()) return fail(seconds.status());
  }
  const ReportQuery query = [&](const std::string& sql) { return reads.Query(sql); };
  auto html = BuildReport(query, options);
  if (!html.ok()) return fail(html.status());
  // Written whole or not at all: a report a browser has open is never seen half-written.
  Status written = WriteFileAtomically(options.out, *html);
  if (!written.ok()) return fail(written);
  std::cout << "wrote " << options.out << " (" << html->size() << " bytes)\n";
  return 0;
}

}  // namespace benchfleet
