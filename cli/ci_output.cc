#include "cli/ci_output.h"

#include <map>

#include "cli/format.h"
#include "cli/svg_chart.h"

namespace benchfleet {
namespace {

using json = nlohmann::json;

std::string Text(const json& row, const std::string& column) {
  auto it = row.find(column);
  return it == row.end() ? "" : FormatCell(*it);
}

std::string Attribute(const std::string& name, const std::string& value) {
  return " " + name + "=\"" + EscapeXml(value) + "\"";
}

}  // namespace

std::string JunitXml(const std::string& suite, const std::vector<JunitCase>& cases) {
  int failures = 0, skipped = 0;
  for (const JunitCase& c : cases) {
    failures += c.failure ? 1 : 0;
    skipped += c.skipped ? 1 : 0;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite" +
                    Attribute("name", suite) + Attribute("tests", std::to_string(cases.size())) +
                    Attribute("failures", std::to_string(failures)) + Attribute("errors", "0") +
                    Attribute("skipped", std::to_string(skipped)) + ">\n";
  for (const JunitCase& c : cases) {
    xml += "    <testcase" + Attribute("name", c.name) + Attribute("classname", c.classname);
    if (!c.failure && !c.skipped) {
      xml += "/>\n";
      continue;
    }
    xml += ">\n";
    if (c.failure) {
      xml += "      <failure" + Attribute("message", *c.failure) + ">" + EscapeXml(c.detail) +
             "</failure>\n";
    }
    if (c.skipped) xml += "      <skipped" + Attribute("message", *c.skipped) + "/>\n";
    xml += "    </testcase>\n";
  }
  return xml + "  </testsuite>\n</testsuites>\n";
}

std::string ConfigurationName(const json& row) {
  std::string name = Text(row, "model");
  // A model run with its defaults has no arguments to tell it by: '' or {}.
  if (const std::string args = Text(row, "model_args"); !args.empty() && args != "{}")
    name += " " + args;
  for (const char* column : {"mode", "dtype"}) name += " " + Text(row, column);
  name += " batch " + Text(row, "batch_size") + " threads " + Text(row, "threads") + " " +
          Text(row, "device");
  return name + " on " + Text(row, "host");
}

ChangeCounts CountChanges(const RowsReply& compared) {
  ChangeCounts counts;
  for (const json& row : compared.Objects()) {
    const std::string change = Text(row, "change");
    if (change == "slower") {
      ++counts.slower;
    } else if (change == "faster") {
      ++counts.faster;
    } else if (change == "unchanged") {
      ++counts.unchanged;
    } else if (change == "host slower" || change == "host faster") {
      ++counts.host;
    } else if (change == "failed") {
      ++counts.failed;
    } else {
      ++counts.unjudged;
    }
  }
  return counts;
}

std::string ChangeSummary(const ChangeCounts& counts) {
  std::string text = std::to_string(counts.slower) + " slower, " + std::to_string(counts.faster) +
                     " faster, " + std::to_string(counts.unchanged) + " unchanged";
  if (counts.host > 0) text += ", " + std::to_string(counts.host) + " moved with the host's pace";
  if (counts.unjudged > 0) text += ", " + std::to_string(counts.unjudged) + " without samples";
  if (counts.failed > 0) text += ", " + std::to_string(counts.failed) + " failed";
  return text;
}

std::string VersusJunit(const RowsReply& compared, int64_t sweep_id) {
  const std::string suite = "benchfleet compare " + std::to_string(sweep_id) + " (versus)";
  std::vector<JunitCase> cases;
  for (const json& row : compared.Objects()) {
    JunitCase c{ConfigurationName(row) + ", " + Text(row, "axis") + " " + Text(row, "a_value") +
                    " vs " + Text(row, "b_value"),
                "benchfleet.compare", std::nullopt, std::nullopt, ""};
    const std::string change = Text(row, "change");
    if (change == "slower") {
      c.failure = "B (" + Text(row, "b_value") + ") slower than A (" + Text(row, "a_value") +
                  "): x" + Text(row, "ratio") + " [" + Text(row, "ratio_ci_low") + ", " +
                  Text(row, "ratio_ci_high") + "]";
      c.detail = "median " + Text(row, "a_median_ms") + " ms -> " + Text(row, "b_median_ms") +
                 " ms over " + Text(row, "pairs") + " pairs (" + Text(row, "pairing") + "), p " +
                 Text(row, "p") + "; " + Text(row, "why");
    } else if (change == "failed") {
      c.skipped = "the pair failed: " + Text(row, "why");
    }
    cases.push_back(std::move(c));
  }
  return JunitXml(suite, cases);
}

std::string CompareJunit(const RowsReply& compared, int64_t sweep_a, int64_t sweep_b) {
  const std::string suite =
      "benchfleet compare " + std::to_string(sweep_a) + " " + std::to_string(sweep_b);
  std::vector<JunitCase> cases;
  for (const json& row : compared.Objects()) {
    JunitCase c{ConfigurationName(row), "benchfleet.compare", std::nullopt, std::nullopt, ""};
    const std::string change = Text(row, "change");
    const std::string figures = "median " + Text(row, "a_median_ms") + " ms -> " +
                                Text(row, "b_median_ms") + " ms, ratio " + Text(row, "ratio") +
                                ", p " + Text(row, "p") + ", samples " + Text(row, "a_samples") +
                                " and " + Text(row, "b_samples");
    if (change == "slower") {
      c.failure = "slower in sweep " + std::to_string(sweep_b) + " than in sweep " +
                  std::to_string(sweep_a) + ": x" + Text(row, "ratio");
      c.detail = figures;
    } else if (change != "faster" && change != "unchanged" && change != "host slower" &&
               change != "host faster") {
      // (A change the host's pace explains passes: the host's, not the code's.)
      c.skipped = change.empty() ? std::string("not compared") : change;
    }
    cases.push_back(std::move(c));
  }
  return JunitXml(suite, cases);
}

int CountRegressions(const RowsReply& confirmed) {
  int regressions = 0;
  for (const json& row : confirmed.Objects())
    regressions += Text(row, "direction") == "slower" ? 1 : 0;
  return regressions;
}

std::string RegressionsJunit(const RowsReply& confirmed, const std::string& since) {
  // One case per configuration, in the order they first appear (newest first).
  std::vector<std::string> order;
  std::map<std::string, JunitCase> cases;
  for (const json& row : confirmed.Objects()) {
    const std::string name = ConfigurationName(row);
    auto [it, fresh] = cases.try_emplace(
        name, JunitCase{name, "benchfleet.regressions", std::nullopt, std::nullopt, ""});
    if (fresh) order.push_back(name);
    const bool slower = Text(row, "direction") == "slower";
    const std::string line = Text(row, "direction") + " " + Text(row, "change_pct") + "% decided " +
                             Text(row, "decided_at") + " (job " + Text(row, "job_id") +
                             ", median " + Text(row, "median_ms") + " ms against a baseline of " +
                             Text(row, "baseline_median_ms") + " ms)";
    JunitCase& c = it->second;
    if (slower && !c.failure)
      c.failure = "confirmed regression: " + Text(row, "change_pct") + "% slower";
    c.detail += (c.detail.empty() ? "" : "\n") + line;
  }
  std::vector<JunitCase> ordered;
  for (const std::string& name : order) {
    JunitCase c = cases.at(name);
    if (!c.failure) c.detail.clear();  // an improvement passes; its figures stay in the table
    ordered.push_back(std::move(c));
  }
  return JunitXml("benchfleet regressions" + (since.empty() ? std::string() : " since " + since),
                  ordered);
}

}  // namespace benchfleet
