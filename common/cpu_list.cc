#include "common/cpu_list.h"

#include <sched.h>

#include <set>
#include <sstream>

namespace benchfleet {

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
