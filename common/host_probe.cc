#include "common/host_probe.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace benchfleet {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Value of the first "key<sep>value" line in a /proc or /etc file, trimmed.
std::string FindValue(const std::string& path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    auto pos = line.find(sep, key.size());
    if (pos == std::string::npos) continue;
    std::string value = line.substr(pos + 1);
    value.erase(0, value.find_first_not_of(" \t\""));
    while (!value.empty() && (value.back() == ' ' || value.back() == '"')) value.pop_back();
    return value;
  }
  return "";
}

}  // namespace

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

nlohmann::json ProbeHost() {
  nlohmann::json host;
  char hostname[256] = {0};
  gethostname(hostname, sizeof hostname - 1);
  host["hostname"] = hostname;
  // Agents sharing one machine must not run jobs at the same time (they would disturb
  // each other's measurements); the machine id tells the scheduler which share one.
  std::string machine_id = ReadFirstLine("/etc/machine-id");
  host["machine_id"] = machine_id.empty() ? std::string(hostname) : machine_id;
  host["cpu_model"] = FindValue("/proc/cpuinfo", "model name", ':');
  host["logical_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  host["allowed_cpus"] = FormatCpuList(AllowedCpus());
  std::string mem_kb = FindValue("/proc/meminfo", "MemTotal", ':');
  host["memory_mb"] = mem_kb.empty() ? 0 : std::stoll(mem_kb) / 1024;
  utsname uts{};
  if (uname(&uts) == 0) {
    host["kernel"] = std::string(uts.sysname) + " " + uts.release;
    host["arch"] = uts.machine;
  }
  host["os"] = FindValue("/etc/os-release", "PRETTY_NAME", '=');
  std::string driver = ReadFirstLine("/proc/driver/nvidia/version");
  host["nvidia_driver"] = driver.empty() ? nullptr : nlohmann::json(driver);
  return host;
}

StatusOr<std::vector<int>> ParseCpuList(const std::string& text) {
  std::set<int> cpus;
  std::stringstream in(text);
  std::string part;
  auto bad = [&](const std::string& why) {
    return InvalidArgument("cpu list \"" + text + "\": " + why);
  };
  while (std::getline(in, part, ',')) {
    if (part.empty()) return bad("empty element");
    auto dash = part.find('-');
    try {
      size_t used = 0;
      int first = std::stoi(part.substr(0, dash), &used);
      if (used != part.substr(0, dash).size()) return bad("\"" + part + "\" is not a number");
      int last = first;
      if (dash != std::string::npos) {
        std::string tail = part.substr(dash + 1);
        last = std::stoi(tail, &used);
        if (used != tail.size()) return bad("\"" + part + "\" is not a range");
      }
      if (first < 0 || last < first || last >= CPU_SETSIZE)
        return bad("bad range \"" + part + "\"");
      for (int cpu = first; cpu <= last; ++cpu) cpus.insert(cpu);
    } catch (const std::exception&) {
      return bad("\"" + part + "\" is not a number or range");
    }
  }
  if (cpus.empty()) return bad("no CPUs");
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace benchfleet
