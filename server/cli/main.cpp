// lockroom: the command-line entry point. One binary, one subcommand per job; each subcommand
// is in its own file (see command.h).
//
//   lockroom serve --stdio      JSON-RPC for editors (LSP framing); `--framing ndjson` for ACP-style
//   lockroom --stdio            the same (editor clients append a bare --stdio)
//   lockroom version [--json]
//   lockroom doctor  [--json]   what this machine can do
//   lockroom run -- CMD ARGS…   CMD in a fresh sandbox
//   lockroom image build|ls     the default guest image
//   lockroom diff ID [--stat]   the changes of a sandbox another lockroom runs
//   lockroom apply ID           …applied to the workspace (or --branch NAME, or --discard)
//   lockroom kit ls|validate|show  kits: what a sandbox can be given
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "server/cli/command.h"
#include "server/cli/diff_apply_command.h"

#ifndef LOCKROOM_VERSION
#define LOCKROOM_VERSION "0.0.0"
#endif

namespace {

// Editors append a bare `--stdio`; without a subcommand it means `serve --stdio`.
std::vector<std::string> normalise_args(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool has_stdio = std::find(args.begin(), args.end(), "--stdio") != args.end();
  const std::vector<const CLI::App*> subcommands = app.get_subcommands({});
  bool has_subcommand = std::any_of(args.begin(), args.end(), [&](const std::string& a) {
    return std::any_of(subcommands.begin(), subcommands.end(), [&](const CLI::App* sub) { return sub->get_name() == a; });
  });
  if (has_stdio && !has_subcommand) args.insert(args.begin(), "serve");
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lockroom::cli;
  CLI::App app{"lockroom: runs AI coding agents in disposable QEMU microVMs and returns their changes for review"};
  app.require_subcommand(1);
  app.fallthrough();  // global options (--log-level, --log-file) may also follow the subcommand
  CommandContext ctx;
  ctx.version = LOCKROOM_VERSION;
  app.add_option("--log-level", ctx.log.level, "trace, debug, info, warn, error or off")->capture_default_str();
  app.add_option("--log-file", ctx.log.file, "also write logs to this file (stdout never carries logs)");
  app.parse_complete_callback([&] {
    if (auto ok = setup_logging(ctx.log); !ok) throw CLI::ValidationError("--log-level/--log-file", ok.error().message);
  });

  add_serve_command(app, ctx);
  add_version_command(app, ctx);
  add_doctor_command(app, ctx);
  add_image_command(app, ctx);
  add_run_command(app, ctx);
  add_ps_command(app, ctx);
  add_kill_command(app, ctx);
  add_diff_command(app, ctx);
  add_apply_command(app, ctx);
  add_kit_command(app, ctx);
  add_workspace_command(app, ctx);
  add_acp_command(app, ctx);

  std::vector<std::string> args = normalise_args(app, argc, argv);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector of arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return ctx.exit_code;
}
