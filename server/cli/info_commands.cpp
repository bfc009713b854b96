// `lockroom version` and `lockroom doctor`: facts about lockroom and the machine.
#include <iostream>

#include <nlohmann/json.hpp>

#include "server/cli/command.h"
#include "server/cli/doctor.h"

namespace lockroom::cli {

void add_version_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("version", "print the version");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "machine-readable output");
  cmd->callback([&ctx, json] {
    if (*json)
      std::cout << nlohmann::json{{"name", "lockroom"}, {"version", ctx.version}}.dump() << "\n";
    else
      std::cout << "lockroom " << ctx.version << "\n";
    ctx.exit_code = 0;
  });
}

void add_doctor_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("doctor", "explain what this machine can do (QEMU, KVM, disk)");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "machine-readable output");
  cmd->callback([&ctx, json] {
    MachineReport report = probe_machine(ctx.version);
    if (*json)
      std::cout << render_json(report).dump(2) << "\n";
    else
      std::cout << render_text(report);
    ctx.exit_code = report.ready() ? 0 : 1;
  });
}

}  // namespace lockroom::cli
