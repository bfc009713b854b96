// Orphan sweeping; see orphans.h.
#include "server/vm/orphans.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace lockroom::vm {

namespace fs = std::filesystem;

std::optional<int> owner_pid_of(const std::string& name) {
  std::size_t dash = name.find('-');
  if (dash == 0 || dash == std::string::npos || dash > 9) return std::nullopt;
  int pid = 0;
  for (std::size_t i = 0; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid > 0 ? std::optional<int>(pid) : std::nullopt;
}

bool lockroom_is_running(int pid) {
  if (pid == getpid()) return true;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  if (ec) return kill(pid, 0) == 0;  // exists but unreadable: assume it is alive
  return exe.filename().string().rfind("lockroom", 0) == 0;
}

namespace {

// Processes whose command line mentions `dir` (QEMU names its state dir in several options).
std::vector<int> processes_using(const fs::path& dir) {
  std::vector<int> pids;
  std::error_code ec;
  const std::string needle = dir.string() + "/";
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string cmdline = text.str();
    if (cmdline.rfind("qemu-system", 0) != 0 && cmdline.find("/qemu-system") == std::string::npos) continue;
    if (cmdline.find(needle) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

}  // namespace

OrphanReport sweep_orphans(const fs::path& state_root, const std::function<bool(int)>& owner_alive) {
  OrphanReport report;
  for (const char* kind : {"vms", "templates"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(state_root / kind, ec)) {
      auto owner = owner_pid_of(entry.path().filename().string());
      if (!owner || owner_alive(*owner)) continue;
      for (int pid : processes_using(entry.path())) {
        if (::kill(pid, SIGKILL) == 0) report.killed_qemu_pids.push_back(pid);
      }
      // Template RAM files live in /dev/shm, named after the template dir.
      fs::remove(fs::path("/dev/shm") / ("lockroom-" + entry.path().filename().string() + ".ram"), ec);
      fs::remove_all(entry.path(), ec);
      if (!ec) report.removed_dirs.push_back(entry.path());
    }
  }
  return report;
}

}  // namespace lockroom::vm
