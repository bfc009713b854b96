// `lockroom ps [--json]` and `lockroom kill ID…`: the sandboxes running on this machine under
// this user's state dir, whichever lockroom process (editor server or `lockroom run`) owns them
// (records in server/core/sandbox_registry.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "server/cli/command.h"
#include "server/common/paths.h"
#include "server/core/sandbox_registry.h"
#include "server/vm/orphans.h"

namespace lockroom::cli {

namespace {

using core::SandboxRecord;

// Records whose owning lockroom still runs (the rest are orphans the next start sweeps).
std::vector<SandboxRecord> live_records() {
  auto records = core::read_sandbox_records(default_paths().state);
  std::erase_if(records, [](const SandboxRecord& r) { return !vm::lockroom_is_running(r.owner_pid); });
  return records;
}

// The first word of a process's command line with its arguments, e.g. "lockroom run -- claude".
std::string command_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text, arg;
  while (std::getline(in, arg, '\0') && text.size() < 60) {
    if (!text.empty()) text += ' ';
    if (text.empty()) arg = arg.substr(arg.find_last_of('/') + 1);
    text += arg;
  }
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

long pss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key, rest;
  long value = -1;
  while (in >> key) {
    if (key == "Pss:") {
      in >> value;
      break;
    }
    std::getline(in, rest);
  }
  return value;
}

std::string age_text(std::int64_t created_unix_ms) {
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::int64_t s = std::max<std::int64_t>(0, (now_ms - created_unix_ms) / 1000);
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600), static_cast<long long>((s / 60) % 60));
  return buf;
}

int run_ps(bool as_json) {
  auto records = live_records();
  if (as_json) {
    auto list = nlohmann::json::array();
    for (const auto& r : records) {
      auto j = nlohmann::json::parse(core::record_to_json(r));
      j["owner"] = command_of(r.owner_pid);
      j["pssKiB"] = pss_kib(r.qemu_pid);
      list.push_back(std::move(j));
    }
    std::cout << nlohmann::json{{"sandboxes", list}}.dump(2) << "\n";
    return 0;
  }
  if (records.empty()) {
    std::cout << "no sandboxes are running\n";
    return 0;
  }
  std::printf("%-10s %-8s %4s %8s %9s %-5s %8s  %s\n", "ID", "AGE", "CPUS", "MEMORY", "HOST PSS", "ACCEL", "OWNER", "COMMAND");
  for (const auto& r : records) {
    long pss = pss_kib(r.qemu_pid);
    std::string pss_text = pss < 0 ? "-" : std::to_string(pss / 1024) + " MiB";
    std::printf("%-10s %-8s %4d %4d MiB %9s %-5s %8d  %s\n", r.id.c_str(), age_text(r.created_unix_ms).c_str(), r.limits.cpus,
                r.limits.memory_mib, pss_text.c_str(), r.accel.c_str(), r.owner_pid, command_of(r.owner_pid).c_str());
  }
  return 0;
}

int run_kill(const std::vector<std::string>& ids) {
  auto records = live_records();
  int status = 0;
  for (const auto& id : ids) {
    auto record = core::find_sandbox_record(records, id);
    auto killed = record ? core::kill_sandbox(*record, static_cast<int>(getpid())) : Result<void>(record.error());
    if (!killed) {
      std::cerr << "lockroom: " << killed.error().message << "\n";
      status = 1;
      continue;
    }
    std::cout << "killed " << record->id << " (owned by process " << record->owner_pid << ", which reports it as killed)\n";
  }
  return status;
}

}  // namespace

void add_ps_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("ps", "list the sandboxes running on this machine");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "machine-readable output");
  cmd->callback([&ctx, as_json] { ctx.exit_code = run_ps(*as_json); });
}

void add_kill_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("kill", "end running sandboxes (by id or unambiguous id prefix, as `lockroom ps` shows)");
  auto ids = std::make_shared<std::vector<std::string>>();
  cmd->add_option("id", *ids, "sandbox ids")->required();
  cmd->callback([&ctx, ids] { ctx.exit_code = run_kill(*ids); });
}

}  // namespace lockroom::cli
