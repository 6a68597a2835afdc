#include "coordinator/metrics/exposition.h"

#include <charconv>
#include <cmath>

namespace benchfleet {
namespace {

constexpr const char* kPrefix = "benchfleet_";

// HELP text escapes backslash and newline (not quotes).
std::string EscapeHelp(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Family(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + EscapeHelp(help) + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}

void Sample(std::string& out, const std::string& name, const std::string& labels,
            const std::string& value) {
  out += name;
  out += labels;
  out += ' ';
  out += value;
  out += '\n';
}

std::string Label(const char* key, const std::string& value) {
  return std::string("{") + key + "=\"" + EscapeLabelValue(value) + "\"}";
}

void Gauges(std::string& out, const std::string& name, const std::string& help, const char* label,
            const std::map<std::string, int64_t>& values) {
  Family(out, name, "gauge", help);
  for (const auto& [key, value] : values)
    Sample(out, name, Label(label, key), std::to_string(value));
}

// A histogram's cumulative buckets, then its sum and count.
void Histogram(std::string& out, const std::string& name, const std::string& help,
               const LatencyHistogram& histogram) {
  Family(out, name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    cumulative += histogram.buckets()[i];
    const std::string le =
        i < kLatencyBucketBoundsS.size() ? FormatSampleValue(kLatencyBucketBoundsS[i]) : "+Inf";
    Sample(out, name + "_bucket", "{le=\"" + le + "\"}", std::to_string(cumulative));
  }
  Sample(out, name + "_sum", "", FormatSampleValue(histogram.sum_s()));
  Sample(out, name + "_count", "", std::to_string(histogram.count()));
}

// "results_stored" -> "benchfleet_results_stored_total"; a name already ending in
// _total keeps its one suffix.
std::string CounterName(const std::string& counter) {
  const std::string suffix = "_total";
  const bool has_suffix =
      counter.size() >= suffix.size() &&
      counter.compare(counter.size() - suffix.size(), suffix.size(), suffix) == 0;
  return kPrefix + counter + (has_suffix ? "" : suffix);
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  const double magnitude = std::fabs(value);
  const bool fixed = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e21);
  char text[400];  // the longest fixed form below 1e21 with shortest digits fits easily
  const auto written =
      std::to_chars(text, text + sizeof text, value,
                    fixed ? std::chars_format::fixed : std::chars_format::scientific);
  return std::string(text, written.ptr);
}

void AddJobCounts(const std::vector<RequirementJobCount>& counts, MetricsSnapshot* snapshot) {
  for (const RequirementJobCount& count : counts) {
    auto named = snapshot->requirement_names.find(count.requirement_id);
    const std::string name = named != snapshot->requirement_names.end()
                                 ? named->second
                                 : "requirement " + std::to_string(count.requirement_id);
    snapshot->jobs_queued[name] += count.queued;
    snapshot->jobs_running[name] += count.running;
  }
}

std::string RenderExposition(const MetricsSnapshot& snapshot) {
  std::string out;
  out.reserve(8192);
  const std::string p = kPrefix;
  Gauges(out, p + "agents", "Registered agents by state, as status shows them.", "state",
         snapshot.agents_by_state);
  Gauges(
      out, p + "jobs_queued",
      "Jobs waiting to be handed out, per requirement (the agents they need, as status names it).",
      "requirement", snapshot.jobs_queued);
  Gauges(out, p + "jobs_running", "Jobs handed out and not finished, per requirement.",
         "requirement", snapshot.jobs_running);
  for (const auto& [name, value] : snapshot.counters.Named()) {
    const std::string family = CounterName(name);
    Family(out, family, "counter", CoordinatorCounters::Meaning(name));
    Sample(out, family, "", std::to_string(value));
  }
  Histogram(out, p + "loop_iteration_seconds",
            "Time the coordinator's loop was busy per wake-up, from its poll returning (a message "
            "or the tick) to polling again: how long a new message may wait unread.",
            snapshot.loop_iteration);
  Histogram(out, p + "store_commit_seconds",
            "Time of each group commit of a round's store writes (one sync per round).",
            snapshot.store_commit);
  Family(out, p + "start_time_seconds", "gauge", "When the coordinator started, in Unix seconds.");
  Sample(out, p + "start_time_seconds", "", FormatSampleValue(snapshot.start_time_s));
  Family(out, p + "build_info", "gauge", "The coordinator's build; the value is always 1.");
  Sample(out, p + "build_info", Label("version", snapshot.version), "1");
  return out;
}

}  // namespace benchfleet
