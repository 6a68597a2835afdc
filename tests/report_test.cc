// `benchfleet report` on the store of a real sweep taken twice: the page has every
// chart it should, with points, says so for sections without data, names nothing
// outside itself, and renders in headless Chromium (a screenshot is kept as an artifact).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "tests/fleet.h"
#include "tests/process.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;

// Chromium's start, render and exit on 2 cores take a few seconds; past this it hangs.
constexpr auto kChromiumDeadline = 90s;

// The first of Debian's and other distributions' names for Chromium found on PATH.
std::string FindChromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::string out, err;
    if (RunCommand({"/bin/sh", "-c", std::string("command -v ") + name}, &out, &err) == 0 &&
        !out.empty()) {
      return out.substr(0, out.find('\n'));
    }
  }
  return "";
}

// Runs headless Chromium on `html` with `args` (stdout to `out_path`); true when it
// ended in time with status 0. As root Chromium needs --no-sandbox; a fresh profile
// keeps it from touching anyone's.
bool RunChromium(const std::string& chromium, const TempDir& dir, const std::string& html,
                 const std::string& args, const std::string& out_path, std::string* why) {
  static int runs = 0;
  const std::string profile = dir / ("profile-" + std::to_string(++runs));
  const std::string command = "exec '" + chromium + "' --headless=new --no-sandbox --disable-gpu " +
                              "--no-first-run --user-data-dir='" + profile + "' " + args +
                              " 'file://" + html + "' > '" + out_path + "'";
  ChildProcess chromium_process;
  if (!chromium_process.Start({"/bin/sh", "-c", command}, dir / "chromium.log")) {
    *why = "could not start " + chromium;
    return false;
  }
  const int status = chromium_process.Wait(kChromiumDeadline);
  if (status == -1) {
    chromium_process.Stop(2000ms);
    *why = "chromium did not finish within the deadline";
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = "chromium failed: " + ReadFile(dir / "chromium.log");
    return false;
  }
  return true;
}

// The text of each <svg data-chart="NAME"> ... </svg> element, by name. (Plain string
// scanning: GCC 12's <regex> does not build warning-free under the sanitizers.)
std::map<std::string, std::string> Charts(const std::string& dom) {
  std::map<std::string, std::string> charts;
  const std::string attribute = "data-chart=\"";
  for (size_t start = dom.find("<svg"); start != std::string::npos;
       start = dom.find("<svg", start + 1)) {
    const size_t tag_end = dom.find('>', start);
    const size_t name_at = dom.find(attribute, start);
    if (tag_end == std::string::npos || name_at == std::string::npos || name_at > tag_end) continue;
    const size_t name_end = dom.find('"', name_at + attribute.size());
    const size_t end = dom.find("</svg>", start);
    charts[dom.substr(name_at + attribute.size(), name_end - name_at - attribute.size())] =
        dom.substr(start, end == std::string::npos ? std::string::npos : end - start);
  }
  return charts;
}

// Elements <circle ...> or <rect ...> with class="point".
size_t Points(const std::string& svg) {
  size_t points = 0;
  for (size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    if (svg.compare(at + 1, 6, "circle") != 0 && svg.compare(at + 1, 4, "rect") != 0) continue;
    const size_t tag_end = svg.find('>', at);
    const size_t cls = svg.find("class=\"point\"", at);
    if (cls != std::string::npos && cls < tag_end) ++points;
  }
  return points;
}

class ReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fleet_ = new Fleet();
    ASSERT_TRUE(fleet_->StartCoordinator()) << fleet_->Logs();
    ASSERT_TRUE(fleet_->StartAgent("devbox")) << fleet_->Logs();
    ASSERT_TRUE(fleet_->WaitForAgents(1, 60s)) << fleet_->Logs();
    // Small: one model, two batch sizes, one and two threads, fp32 and int8 (8 jobs), taken twice.
    const nlohmann::json sweep = nlohmann::json::parse(R"({
        "name": "report-nightly", "placement": "any", "labels": {"team": "<b>infra</b> & co"},
        "matrix": {"model": "mlp", "mode": "inference", "batch_size": [1, 16],
                   "threads": [1, 2], "dtype": ["fp32", "int8"]},
        "models": {"mlp": {"layers": [128, 128, 10]}},
        "timing": {"warmup_s": 0.02, "min_time_s": 0.05, "max_time_s": 0.2}})");
    for (int night = 0; night < 2; ++night) {
      std::string error;
      const int64_t id = fleet_->Submit(sweep, &error);
      ASSERT_GT(id, 0) << error;
      const nlohmann::json done = fleet_->WaitForSweep(id, 300s);
      ASSERT_EQ(done.value("state", ""), "done") << done.dump() << fleet_->Logs();
      sweeps_.push_back(id);
    }
  }
  static void TearDownTestSuite() {
    delete fleet_;
    fleet_ = nullptr;
  }
  void SetUp() override {
    if (sweeps_.size() != 2) GTEST_FAIL() << "the two nights did not run";
  }
  static int Report(std::vector<std::string> args, std::string* out, std::string* err) {
    std::vector<std::string> argv = {kCliBin, "--coordinator", fleet_->clients_endpoint(),
                                     "report"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, out, err);
  }
  static Fleet* fleet_;
  static std::vector<int64_t> sweeps_;
};
Fleet* ReportTest::fleet_ = nullptr;
std::vector<int64_t> ReportTest::sweeps_;

TEST_F(ReportTest, BadArgumentsAndMissingSweepsAreErrors) {
  std::string out, err;
  const std::string file = fleet_->dir("never.html");
  EXPECT_EQ(Report({"--sweep", "1", "--since", "1d", "--out", file}, &out, &err), 2) << err;
  EXPECT_EQ(Report({"--since", "seven days", "--out", file}, &out, &err), 2) << err;
  EXPECT_EQ(Report({"--sweep", "1"}, &out, &err), 2) << "--out is required";
  EXPECT_EQ(Report({"--sweep", "999", "--out", file}, &out, &err), 1);
  EXPECT_NE(err.find("sweep 999 does not exist"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(ReportTest, OneSweepHasItsChartsAndNoExternalReference) {
  std::string out, err;
  const std::string file = fleet_->dir("sweep.html");
  ASSERT_EQ(Report({"--sweep", std::to_string(sweeps_[1]), "--out", file}, &out, &err), 0) << err;
  const std::string html = ReadFile(file);
  for (const char* external : {"http://", "https://", "src=", "<script", "url(", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  EXPECT_NE(html.find("report-nightly"), std::string::npos) << "the header names the sweep";
  EXPECT_NE(html.find("team=&lt;b&gt;infra&lt;/b&gt; &amp; co"), std::string::npos)
      << "and its labels, escaped";
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  const auto charts = Charts(html);
  for (const char* name : {"throughput-mlp", "threads-mlp", "dtype-speedup", "history"}) {
    ASSERT_TRUE(charts.count(name)) << name;
  }
  EXPECT_EQ(Points(charts.at("throughput-mlp")), 8u);  // 2 batch sizes x 2 threads x 2 dtypes
  EXPECT_EQ(Points(charts.at("dtype-speedup")), 4u);   // int8 in 4 configurations
  EXPECT_EQ(charts.count("cpu-gpu-speedup"), 0u);
}

TEST_F(ReportTest, RendersInHeadlessChromium) {
  const std::string chromium = FindChromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (deploy/install-deps.sh installs it)";
  TempDir dir("report-chromium");
  const std::string file = dir / "report.html";
  std::string out, err;
  ASSERT_EQ(Report({"--since", "1d", "--out", file}, &out, &err), 0) << err;

  std::string why;
  ASSERT_TRUE(RunChromium(chromium, dir, file, "--dump-dom", dir / "dom.html", &why)) << why;
  const std::string dom = ReadFile(dir / "dom.html");
  const auto charts = Charts(dom);
  for (const char* name : {"throughput-mlp", "threads-mlp", "dtype-speedup", "history"}) {
    ASSERT_TRUE(charts.count(name)) << name << " is not in the rendered page";
    EXPECT_GE(Points(charts.at(name)), 1u) << name;
  }
  EXPECT_GE(Points(charts.at("history")), 16u) << "8 series, 2 nights each";
  // Every median with its 95% interval, drawn as an error bar in the rendered page.
  size_t error_bars = 0;
  for (size_t at = charts.at("history").find("class=\"error-bar\""); at != std::string::npos;
       at = charts.at("history").find("class=\"error-bar\"", at + 1)) {
    ++error_bars;
  }
  EXPECT_GT(error_bars, 0u);
  EXPECT_LE(error_bars, Points(charts.at("history")));
  // Sections without data say so instead of drawing an empty chart.
  EXPECT_NE(dom.find("no configuration ran on both cpu and cuda in this range"), std::string::npos);
  EXPECT_NE(dom.find("no data- or model-parallel results (world size &gt; 1) in this range"),
            std::string::npos);
  EXPECT_EQ(charts.count("cpu-gpu-speedup") + charts.count("parallel-efficiency"), 0u);

  const char* env = std::getenv("BENCHFLEET_ARTIFACTS_DIR");
  const std::string artifacts = env && *env ? env : BENCHFLEET_BUILD_DIR "/artifacts";
  std::filesystem::create_directories(artifacts);
  const std::string png = artifacts + "/report.png";
  ASSERT_TRUE(RunChromium(chromium, dir, file,
                          "--screenshot='" + png + "' --window-size=1280,4000 --hide-scrollbars",
                          dir / "screenshot.out", &why))
      << why;
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 10000u);
  std::cout << "FIGURE report of the last day rendered by headless Chromium: " << png << "\n";
}

}  // namespace
}  // namespace benchfleet::testing
