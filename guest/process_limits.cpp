// Process-count limits via cgroup v2 pids or RLIMIT_NPROC; see process_limits.h.
#include "guest/process_limits.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "guest/log.h"
#include "protocol/channel/messages.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace lockroom::agent {

namespace channel = protocol::channel;

bool ProcessLimits::write_file(const std::string& path, const std::string& text, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok && error) *error = "writing \"" + text + "\" to " + path + ": " + std::strerror(errno);
  if (fd >= 0) ::close(fd);
  return ok;
}

std::optional<std::string> ProcessLimits::setup(const std::string& root, bool pid1) {
  struct statfs fs{};
  if (::statfs(root.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    if (!pid1) return root + " is not a cgroup2 mount";
    ::mkdir(root.c_str(), 0755);
    if (::mount("cgroup2", root.c_str(), "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      return std::string("cannot mount cgroup2 on ") + root + ": " + std::strerror(errno);
  }
  std::ifstream controllers(root + "/cgroup.controllers");
  std::string all((std::istreambuf_iterator<char>(controllers)), std::istreambuf_iterator<char>());
  if (all.find("pids") == std::string::npos) return "the pids controller is not available in " + root;
  std::string error;
  if (!write_file(root + "/cgroup.subtree_control", "+pids", &error)) return error;
  std::string work = root + "/lockroom-work";
  if (::mkdir(work.c_str(), 0755) != 0 && errno != EEXIST) return "cannot create " + work + ": " + std::strerror(errno);
  if (!write_file(work + "/cgroup.subtree_control", "+pids", &error)) return error;
  work_ = work;
  return std::nullopt;
}

void ProcessLimits::init(const AgentSettings& settings, bool pid1) {
  global_ = settings.max_processes;
  if (settings.cgroup && (pid1 || settings.cgroup_root)) {
    std::string root = settings.cgroup_root.value_or("/sys/fs/cgroup");
    if (auto problem = setup(root, pid1)) {
      log_warn("process limits fall back to RLIMIT_NPROC (not enforced for root): " + *problem);
    } else {
      cgroup_ = true;
      log_info("process limits use the cgroup v2 pids controller in " + work_);
    }
  }
  if (cgroup_ && global_) write_file(work_ + "/pids.max", std::to_string(*global_));
}

Outcome ProcessLimits::set(const json& params) {
  auto parsed = channel::parse_limits_params(params);
  if (!parsed) return invalid_params(parsed.error());
  if (parsed->max_processes) {
    if (cgroup_ && !write_file(work_ + "/pids.max", std::to_string(*parsed->max_processes))) {
      return errno_error(errno, "limits.set: writing " + work_ + "/pids.max");
    }
    global_ = parsed->max_processes;
  }
  channel::LimitsResult result{global_, enforcement()};
  return channel::to_json(result);
}

std::variant<ProcessLimits::Placement, RpcError> ProcessLimits::place(std::optional<std::int64_t> per_process) {
  Placement placement;
  if (!cgroup_) {
    placement.rlimit = per_process ? per_process : global_;
    return placement;
  }
  std::string dir = work_ + "/p" + std::to_string(next_++);
  if (::mkdir(dir.c_str(), 0755) != 0) return errno_error(errno, "process.start: creating cgroup " + dir);
  if (per_process && !write_file(dir + "/pids.max", std::to_string(*per_process))) {
    int err = errno;
    ::rmdir(dir.c_str());
    return errno_error(err, "process.start: setting pids.max in " + dir);
  }
  placement.procs_fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (placement.procs_fd < 0) {
    int err = errno;
    ::rmdir(dir.c_str());
    return errno_error(err, "process.start: opening " + dir + "/cgroup.procs");
  }
  placement.dir = dir;
  return placement;
}

void ProcessLimits::placed(Placement& placement) {
  if (placement.procs_fd >= 0) ::close(placement.procs_fd);
  placement.procs_fd = -1;
}

void ProcessLimits::remove(const std::string& dir) {
  if (!dir.empty() && ::rmdir(dir.c_str()) != 0 && errno != ENOENT)
    log_debug("cgroup " + dir + " stays for now: " + std::strerror(errno));
}

void ProcessLimits::kill_all() {
  if (cgroup_) write_file(work_ + "/cgroup.kill", "1");
}

}  // namespace lockroom::agent
