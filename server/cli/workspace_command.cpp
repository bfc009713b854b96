// `lockroom workspace ls [--json]` and `lockroom workspace prune [--unused-days N] [--all]`: the
// private stores lockroom keeps per workspace folder (<cache>/workspaces/<key>/store.git, every
// snapshot of the folder and every file fetched back from its sandboxes: copies of the user's
// code). A store a running lockroom holds is never removed (store_prune.h).
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include <nlohmann/json.hpp>

#include "server/cli/command.h"
#include "server/common/paths.h"
#include "server/workspace/snapshot/snapshot_limits.h"
#include "server/workspace/snapshot/store_prune.h"

namespace lockroom::cli {

namespace {

namespace snap = workspace::snapshot;

std::string local_time(std::chrono::system_clock::time_point when) {
  char text[32] = "";
  std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", std::localtime(&t));
  return text;
}

std::filesystem::path workspaces_dir() { return default_paths().cache / "workspaces"; }

std::string folder_of(const snap::StoreListing& store) {
  if (!store.workspace) return "(folder not recorded)";
  return *store.workspace + (store.workspace_exists ? "" : " (gone)");
}

int run_ls(bool json) {
  auto stores = snap::list_stores(workspaces_dir());
  if (json) {
    auto list = nlohmann::json::array();
    for (const auto& s : stores)
      list.push_back({{"key", s.key},
                      {"path", s.dir.string()},
                      {"workspace", s.workspace ? nlohmann::json(*s.workspace) : nlohmann::json(nullptr)},
                      {"workspaceExists", s.workspace_exists},
                      {"lastUsed", std::chrono::duration_cast<std::chrono::seconds>(s.last_used.time_since_epoch()).count()},
                      {"bytes", s.bytes},
                      {"inUse", s.in_use}});
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  if (stores.empty()) {
    std::cout << "no workspace stores in " << workspaces_dir().string() << "\n";
    return 0;
  }
  std::uint64_t total = 0;
  std::printf("  %-40s  %-10s  %-16s  %-6s  %s\n", "STORE", "SIZE", "LAST USED", "IN USE", "FOLDER");
  for (const auto& s : stores) {
    std::printf("  %-40s  %-10s  %-16s  %-6s  %s\n", s.key.c_str(), snap::human_bytes(s.bytes).c_str(), local_time(s.last_used).c_str(),
                s.in_use ? "yes" : "no", folder_of(s).c_str());
    total += s.bytes;
  }
  std::printf("%zu store%s, %s (`lockroom workspace prune` removes unused ones; a new sandbox makes its store again)\n", stores.size(),
              stores.size() == 1 ? "" : "s", snap::human_bytes(total).c_str());
  return 0;
}

int run_prune(int unused_days, bool all) {
  snap::PruneRule rule;
  rule.all = all;
  if (unused_days >= 0) rule.unused_for = std::chrono::hours(24) * unused_days;
  auto report = snap::prune_stores(workspaces_dir(), rule);
  for (const auto& s : report.removed) std::cout << "removed " << s.key << " (" << snap::human_bytes(s.bytes) << ", " << folder_of(s) << ")\n";
  for (const auto& s : report.kept_in_use) std::cout << "kept " << s.key << ": a running lockroom uses it (" << folder_of(s) << ")\n";
  for (const auto& e : report.errors) std::cerr << "lockroom: " << e << "\n";
  std::cout << "removed " << report.removed.size() << " store" << (report.removed.size() == 1 ? "" : "s") << ", "
            << snap::human_bytes(report.bytes_freed) << " freed\n";
  return report.errors.empty() ? 0 : 1;
}

}  // namespace

void add_workspace_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("workspace", "list and remove the stores lockroom keeps per workspace folder");
  cmd->require_subcommand(1);

  auto* ls = cmd->add_subcommand("ls", "list the workspace stores: size, last use, the folder each is of");
  auto json = std::make_shared<bool>(false);
  ls->add_flag("--json", *json, "machine-readable output");
  ls->callback([&ctx, json] { ctx.exit_code = run_ls(*json); });

  auto* prune = cmd->add_subcommand(
      "prune", "remove the stores of folders that are gone, and those unused for --unused-days (default 30); never one in use");
  auto days = std::make_shared<int>(30);
  auto all = std::make_shared<bool>(false);
  prune->add_option("--unused-days", *days, "also remove stores not used for this many days (0: every store not in use)")->check(CLI::NonNegativeNumber);
  prune->add_flag("--all", *all, "remove every store not in use");
  prune->callback([&ctx, days, all] { ctx.exit_code = run_prune(*days, *all); });
}

}  // namespace lockroom::cli
