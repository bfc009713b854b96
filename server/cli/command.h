// How subcommands plug into the `lockroom` binary.
//
// Each subcommand lives in its own file and offers `add_<name>_command(CLI::App&, CommandContext&)`,
// which declares its options and sets a callback that runs the command and stores its exit code
// in the context. main.cpp only lists them. CLI thread only.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "server/cli/logging.h"

namespace lockroom::cli {

struct CommandContext {
  std::string version;
  LogOptions log;
  int exit_code = 0;
};

void add_serve_command(CLI::App& app, CommandContext& ctx);
void add_version_command(CLI::App& app, CommandContext& ctx);
void add_doctor_command(CLI::App& app, CommandContext& ctx);
void add_image_command(CLI::App& app, CommandContext& ctx);
void add_run_command(CLI::App& app, CommandContext& ctx);
void add_ps_command(CLI::App& app, CommandContext& ctx);
void add_kill_command(CLI::App& app, CommandContext& ctx);
void add_kit_command(CLI::App& app, CommandContext& ctx);
void add_workspace_command(CLI::App& app, CommandContext& ctx);
void add_acp_command(CLI::App& app, CommandContext& ctx);

}  // namespace lockroom::cli
