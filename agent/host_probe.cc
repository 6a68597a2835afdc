#include "agent/host_probe.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "common/cpu_list.h"

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

HostFacts ProbeHost() {
  HostFacts host;
  char hostname[256] = {0};
  gethostname(hostname, sizeof hostname - 1);
  host.hostname = hostname;
  // Agents sharing one machine must not run jobs at the same time (they would disturb
  // each other's measurements); the machine id tells the scheduler which share one.
  std::string machine_id = ReadFirstLine("/etc/machine-id");
  host.machine_id = machine_id.empty() ? std::string(hostname) : machine_id;
  host.cpu_model = FindValue("/proc/cpuinfo", "model name", ':');
  if (const long cpus = sysconf(_SC_NPROCESSORS_ONLN); cpus > 0) host.logical_cpus = cpus;
  host.allowed_cpus = FormatCpuList(AllowedCpus());
  std::string mem_kb = FindValue("/proc/meminfo", "MemTotal", ':');
  host.memory_mb = mem_kb.empty() ? 0 : std::stoll(mem_kb) / 1024;
  utsname uts{};
  if (uname(&uts) == 0) {
    host.kernel = std::string(uts.sysname) + " " + uts.release;
    host.arch = uts.machine;
  }
  host.os = FindValue("/etc/os-release", "PRETTY_NAME", '=');
  std::string driver = ReadFirstLine("/proc/driver/nvidia/version");
  host.nvidia_driver =
      NullableText::Of(driver.empty() ? std::nullopt : std::optional<std::string>(driver));
  // Part of the host's fingerprint: results of another benchfleet start a new series.
  host.benchfleet_version = BENCHFLEET_VERSION;
  return host;
}

}  // namespace benchfleet
