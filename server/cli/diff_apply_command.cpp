// `lockroom diff` and `lockroom apply`; see diff_apply_command.h.
#include "server/cli/diff_apply_command.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "server/api/control_review.h"
#include "server/common/paths.h"
#include "server/vm/orphans.h"

namespace lockroom::cli {

namespace {

// Connects to the sandbox the user named; nothing (the reason printed) when it cannot be reached.
std::optional<api::ControlClient> reach(const std::string& id) {
  auto record = api::find_control_target(default_paths().state, id, vm::lockroom_is_running);
  if (!record) {
    std::cerr << "lockroom: " << record.error().message << "\n";
    return std::nullopt;
  }
  auto client = api::ControlClient::connect(*record);
  if (!client) {
    std::cerr << "lockroom: " << client.error().message << "\n";
    return std::nullopt;
  }
  return std::move(*client);
}

// --color=auto: on a terminal, unless NO_COLOR is set or the terminal is dumb (as git does).
bool use_color(const std::string& when) {
  if (when == "always") return true;
  if (when == "never") return false;
  const char* term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR") && !(term && std::string(term) == "dumb");
}

}  // namespace

void add_diff_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("diff", "show the changes of a running sandbox (id or unambiguous prefix, as `lockroom ps` shows)");
  auto id = std::make_shared<std::string>();
  auto request = std::make_shared<api::DiffRequest>();
  auto color = std::make_shared<std::string>("auto");
  cmd->add_option("id", *id, "the sandbox")->required();
  cmd->add_option("paths", request->paths, "only these files or folders (relative to the workspace's top folder)");
  cmd->add_flag("--stat", request->stat, "a diffstat instead of the patch");
  cmd->add_option("--color", *color, "auto, always or never")->check(CLI::IsMember({"auto", "always", "never"}))->capture_default_str();
  cmd->callback([&ctx, id, request, color] {
    request->color = use_color(*color);
    auto client = reach(*id);
    ctx.exit_code = client ? api::run_diff(*client, *request, std::cout, std::cerr) : 1;
  });
}

void add_apply_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("apply", "apply a running sandbox's changes to its workspace, save them as a branch, or discard them");
  auto id = std::make_shared<std::string>();
  auto request = std::make_shared<api::ApplyRequest>();
  auto branch = std::make_shared<std::string>();
  cmd->add_option("id", *id, "the sandbox")->required();
  cmd->add_option("paths", request->paths, "only these files or folders (relative to the workspace's top folder)");
  auto* branch_opt = cmd->add_option("--branch", *branch, "commit them to the branch lockroom/NAME instead (your checkout is untouched)");
  cmd->add_flag("--force", request->force, "with --branch: replace an existing lockroom/NAME")->needs(branch_opt);
  cmd->add_flag("--discard", request->discard, "throw them away in the sandbox instead (the host is untouched)")->excludes(branch_opt);
  cmd->callback([&ctx, id, request, branch] {
    if (!branch->empty()) request->branch = *branch;
    auto client = reach(*id);
    ctx.exit_code = client ? api::run_apply(*client, *request, std::cout, std::cerr) : 1;
  });
}

}  // namespace lockroom::cli
