// sandbox_config; see sandbox_config.h.
#include "server/cli/sandbox_config.h"

#include <cstdlib>
#include <string>

#include <spdlog/spdlog.h>

#include "server/vm/image/image_builder.h"
#include "server/vm/orphans.h"

namespace lockroom::cli {

core::ManagerConfig sandbox_config() {
  core::ManagerConfig config;
  config.paths = default_paths();
  vm::AccelPreference pref = vm::AccelPreference::kAuto;
  if (const char* a = std::getenv("LOCKROOM_ACCEL")) {
    if (std::string(a) == "kvm") pref = vm::AccelPreference::kKvm;
    if (std::string(a) == "tcg") pref = vm::AccelPreference::kTcg;
  }
  auto choice = vm::choose_accel(vm::probe_host_virt(), pref);
  config.accel = choice.accel;
  spdlog::debug("accelerator {}: {}", vm::accel_name(choice.accel), choice.reason);
  config.agent = vm::image::default_agent_path();

  auto swept = vm::sweep_orphans(config.paths.state, vm::lockroom_is_running);
  for (int pid : swept.killed_qemu_pids) spdlog::info("stopped QEMU {} left by a lockroom that is gone", pid);
  for (const auto& dir : swept.removed_dirs) spdlog::info("removed {} left by a lockroom that is gone", dir.string());
  return config;
}

}  // namespace lockroom::cli
