#include "agent/cgroup_cpuset.h"

#include <filesystem>
#include <sstream>

#include "common/cpu_list.h"
#include "common/files.h"

namespace benchfleet {
namespace {

// One line of /proc/self/mountinfo, as far as finding a cgroup hierarchy needs it.
struct Mount {
  std::string root;         // the path of the hierarchy mounted there ("/" mostly)
  std::string mount_point;  // where it is mounted
  std::string fs_type;      // "cgroup" (v1) or "cgroup2"
  std::string super_options;
};

// mountinfo writes a space, tab, newline or backslash in a path as \ and three octal digits.
std::string Unescape(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() &&
        field.find_first_not_of("01234567", i + 1) >= i + 4) {
      out += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

// "36 35 98:0 /root /mnt rw,noatime shared:1 - cgroup cgroup rw,cpuset": the fields
// before " - " are fixed up to the mount point, then optional ones; after it come the
// file system's type, source and super options.
std::vector<Mount> CgroupMounts(const std::string& mountinfo) {
  std::vector<Mount> mounts;
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream before(line.substr(0, dash)), after(line.substr(dash + 3));
    std::string id, parent, device, root, mount_point, fs_type, source, super_options;
    if (!(before >> id >> parent >> device >> root >> mount_point)) continue;
    if (!(after >> fs_type >> source >> super_options)) continue;
    if (fs_type != "cgroup" && fs_type != "cgroup2") continue;
    mounts.push_back({Unescape(root), Unescape(mount_point), fs_type, super_options});
  }
  return mounts;
}

bool HasWord(const std::string& comma_list, const std::string& word) {
  std::istringstream in(comma_list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == word) return true;
  }
  return false;
}

// The directory of cgroup `path` in the hierarchy mounted at `mount`: a mount of a
// sub-tree (its root not "/", as in a container without a cgroup namespace) holds the
// paths below that root.
std::filesystem::path CgroupDirectory(const Mount& mount, const std::string& path) {
  std::string relative = path;
  if (mount.root != "/" && relative.rfind(mount.root, 0) == 0) {
    relative = relative.substr(mount.root.size());
  }
  return std::filesystem::path(mount.mount_point) / std::filesystem::path(relative).relative_path();
}

// The first of `names` found in `dir` or in its ancestors up to the mount point.
std::optional<std::string> NearestFile(std::filesystem::path dir, const Mount& mount,
                                       const std::vector<std::string>& names) {
  const std::filesystem::path top = std::filesystem::path(mount.mount_point).lexically_normal();
  dir = dir.lexically_normal();
  while (true) {
    for (const std::string& name : names) {
      std::error_code ec;
      if (std::filesystem::exists(dir / name, ec)) return (dir / name).string();
    }
    // Never above the mount point: another file system's files are not this cgroup's.
    if (dir == top || dir.parent_path() == dir) return std::nullopt;
    dir = dir.parent_path();
    if (dir.string().rfind(top.string(), 0) != 0) return std::nullopt;
  }
}

StatusOr<CgroupCpuset> ReadCpusetFile(const std::string& file) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(file));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return CgroupCpuset{{}, file};
  auto cpus = ParseCpuList(text);
  if (!cpus.ok()) return InvalidArgument(file + ": " + cpus.status().message());
  return CgroupCpuset{*cpus, file};
}

}  // namespace

StatusOr<std::optional<CgroupCpuset>> ReadCgroupCpuset(const std::string& proc_self_cgroup,
                                                       const std::string& mountinfo) {
  // "ID:CONTROLLERS:PATH": v1 names its controllers, v2's one line has ID 0 and none.
  std::optional<std::string> v1_path, v2_path;
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      v2_path = path;
    } else if (HasWord(controllers, "cpuset")) {
      v1_path = path;
    }
  }
  // The cpuset controller is in one hierarchy only: v1's when it is mounted there.
  const std::vector<Mount> mounts = CgroupMounts(mountinfo);
  for (const Mount& mount : mounts) {
    if (mount.fs_type != "cgroup" || !HasWord(mount.super_options, "cpuset") || !v1_path) continue;
    auto file = NearestFile(CgroupDirectory(mount, *v1_path), mount,
                            {"cpuset.effective_cpus", "cpuset.cpus"});
    if (!file) continue;
    ASSIGN_OR_RETURN(CgroupCpuset cpuset, ReadCpusetFile(*file));
    return std::optional<CgroupCpuset>(std::move(cpuset));
  }
  for (const Mount& mount : mounts) {
    if (mount.fs_type != "cgroup2" || !v2_path) continue;
    auto file = NearestFile(CgroupDirectory(mount, *v2_path), mount, {"cpuset.cpus.effective"});
    if (!file) continue;
    ASSIGN_OR_RETURN(CgroupCpuset cpuset, ReadCpusetFile(*file));
    return std::optional<CgroupCpuset>(std::move(cpuset));
  }
  return std::optional<CgroupCpuset>();
}

StatusOr<std::optional<CgroupCpuset>> ReadOwnCgroupCpuset() {
  auto cgroup = ReadWholeFile("/proc/self/cgroup");
  auto mountinfo = ReadWholeFile("/proc/self/mountinfo");
  // Without /proc (a system that has no cgroups) nothing but the affinity confines us.
  if (!cgroup.ok() || !mountinfo.ok()) return std::optional<CgroupCpuset>();
  return ReadCgroupCpuset(*cgroup, *mountinfo);
}

}  // namespace benchfleet
