// Finding what a lockroom that died left behind: QEMU processes and state dirs it owned.
//
// Every Vm's state dir is `<state>/vms/<owner pid>-<seq>-<name>` and every template's is
// `<state>/templates/<owner pid>-<seq>`; QEMU's command line names its state dir. At start-up,
// lockroom removes those whose owner pid is no longer a running lockroom, after killing any
// QEMU whose command line points into them — and touches nothing else. owner_pid_of() and
// the selection are pure; sweep_orphans() reads /proc and deletes. CLI or start-up thread.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lockroom::vm {

// "4242-3-sandbox" -> 4242; nothing for names lockroom does not make.
std::optional<int> owner_pid_of(const std::string& dir_name);

struct OrphanReport {
  std::vector<std::filesystem::path> removed_dirs;
  std::vector<int> killed_qemu_pids;
};

// `owner_alive(pid)` says whether that pid is a lockroom still running (injectable for tests).
OrphanReport sweep_orphans(const std::filesystem::path& state_root, const std::function<bool(int)>& owner_alive);
// The default owner test: the pid exists and its executable is named lockroom*.
bool lockroom_is_running(int pid);

}  // namespace lockroom::vm
