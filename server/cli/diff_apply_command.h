// `lockroom diff ID|prefix [--stat] [PATH…]` and `lockroom apply ID|prefix [--branch NAME]
// [PATH…] [--discard]`: review and take the changes of a sandbox that is still running in
// another lockroom process (an editor's `serve`, or a `lockroom run`), through its control
// socket (server/api/control_client.h, control_review.h). CLI thread only.
#pragma once

#include "server/cli/command.h"

namespace lockroom::cli {

void add_diff_command(CLI::App& app, CommandContext& ctx);
void add_apply_command(CLI::App& app, CommandContext& ctx);

}  // namespace lockroom::cli
