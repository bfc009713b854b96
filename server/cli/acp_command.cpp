// lockroom acp: an ACP agent on stdio that runs another ACP agent in a sandbox per session
// (server/acp/acp_server.h, protocol/acp.md). What Zed, JetBrains AI Assistant, Neovim and Emacs
// spawn: `lockroom acp --kit claude -- claude-agent-acp`.
#include <csignal>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>
#include <uv.h>

#include "server/acp/acp_server.h"
#include "server/acp/lockroom_link.h"
#include "server/cli/command.h"
#include "server/cli/env_option.h"
#include "server/cli/sandbox_config.h"
#include "server/common/paths.h"
#include "server/kits/kit_catalog.h"
#include "server/common/signal_watch.h"

namespace lockroom::cli {

namespace {

struct SharedOptions {
  bool on = false;         // --shared
  std::string server_dir;  // --server-dir
};

// Where `--shared` finds the per-user server, and what a server it starts is given (a running
// one keeps its own settings), as `lockroom serve --stdio` does.
serve::SharedServerTarget shared_target(const SharedOptions& shared, const std::string& version, const std::string& log_level,
                                        const std::vector<std::string>& upstream_ca) {
  Paths paths = default_paths();
  serve::SharedServerTarget target;
  target.dir = shared.server_dir.empty() ? server_dir(paths) : std::filesystem::path(shared.server_dir);
  target.log = paths.state / "server.log";
  target.version = version;
  target.server_args = {"--log-level", log_level};
  for (const auto& ca : upstream_ca) {
    target.server_args.push_back("--upstream-ca");
    target.server_args.push_back(std::filesystem::absolute(ca).string());
  }
  return target;
}

int run_acp(const acp::AcpOptions& options, const std::vector<std::string>& upstream_ca, const SharedOptions& shared,
            const std::string& log_level) {
  std::signal(SIGPIPE, SIG_IGN);
  uv_loop_t loop;
  uv_loop_init(&loop);
  int exit_code = 0;
  {
    core::ManagerConfig config = sandbox_config();
    for (const auto& ca : upstream_ca) config.upstream_ca_files.emplace_back(ca);
    std::filesystem::path cache = config.paths.cache / "acp";
    std::unique_ptr<acp::AcpServer> server;
    bool stopping = false;
    std::unique_ptr<SignalWatch> signals;
    auto stop = [&] {
      if (stopping) return;
      stopping = true;
      if (signals) signals->close();
      if (server) server->stop([] {});
    };
    auto ready = [&](Result<void> ready) {
      if (!ready) {
        spdlog::error("lockroom acp: {}", ready.error().message);
        exit_code = 1;
        stop();
      }
    };
    auto link = shared.on ? acp::LockroomLink::connect(&loop, shared_target(shared, options.version, log_level, upstream_ca), options.version, ready)
                          : acp::LockroomLink::start(&loop, config, options.version, ready);
    if (!link) {
      spdlog::error("lockroom acp: {}", link.error().message);
      return 1;
    }
    rpc::ConnectionOptions editor;
    editor.framing = rpc::FramingKind::kNdjson;
    server = std::make_unique<acp::AcpServer>(&loop, **link, options, cache, editor);
    signals = std::make_unique<SignalWatch>(&loop, [&](int signum) {
      spdlog::info("received signal {}; ending the sessions", signum);
      stop();
    });
    if (auto started = server->start([&] { stop(); }); !started) {
      spdlog::error("lockroom acp: {}", started.error().message);
      exit_code = 1;
      stop();
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    signals.reset();
    server.reset();
    link->reset();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop) != 0) spdlog::error("bug: handles left open at exit");
  return exit_code;
}

}  // namespace

void add_acp_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("acp", "be an ACP agent (Zed, JetBrains, Neovim, Emacs) that runs AGENT in a sandbox per session");
  auto options = std::make_shared<acp::AcpOptions>();
  auto upstream_ca = std::make_shared<std::vector<std::string>>();
  auto env = std::make_shared<std::vector<std::string>>();
  auto no_ask = std::make_shared<bool>(false);
  auto cpus = std::make_shared<int>(0);
  auto memory = std::make_shared<int>(0);
  auto timeout = std::make_shared<int>(0);
  cmd->add_option("--kit", options->kits, "give each session's sandbox this kit (repeatable)")->allow_extra_args(false);
  cmd->add_option("--allow", options->allow, "also allow HOST or HOST:PORT (repeatable); see protocol/network.md")->allow_extra_args(false);
  cmd->add_flag("--no-network", options->no_network, "no way out at all for the agent");
  cmd->add_flag("--no-ask", *no_ask, "deny connections no rule covers instead of asking in the editor");
  cmd->add_option("--secret", options->secrets,
                  "NAME=HOST[,HOST...]: the value of $NAME here, injected by the proxy for those hosts; the guest sees a sentinel (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("-e,--env", *env, "NAME=VALUE for the agent's environment (repeatable)")->allow_extra_args(false);
  cmd->add_option("--cpus", *cpus, "vCPUs for each sandbox (default 1)");
  cmd->add_option("--memory", *memory, "guest memory in MiB for each sandbox (default 512, or what the kits need)");
  cmd->add_option("--timeout", *timeout, "end a session's sandbox after this many seconds (default 7 days)");
  cmd->add_option("--upstream-ca", *upstream_ca, "also trust the CAs in this PEM file for upstream HTTPS (repeatable)")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  auto shared = std::make_shared<SharedOptions>();
  cmd->add_flag("--shared", shared->on,
                "keep the sandboxes in the per-user shared server (as `lockroom serve --stdio` does): when the editor goes, they wait "
                "to be resumed by session/load instead of ending (protocol/acp.md, \"Resuming\")");
  cmd->add_option("--server-dir", shared->server_dir, "with --shared: the shared server's folder (as for `lockroom serve`)");
  cmd->add_option("agent", options->argv, "the ACP agent and its arguments, after --")->required();
  cmd->callback([&ctx, options, upstream_ca, env, no_ask, cpus, memory, timeout, shared] {
    options->version = ctx.version;
    // A kit given by path names a file here; a shared server resolves it from elsewhere.
    for (auto& kit : options->kits)
      if (kits::is_kit_path(kit)) kit = std::filesystem::absolute(kit).string();
    options->ask = !*no_ask;
    if (*cpus > 0) options->resources["cpus"] = *cpus;
    if (*memory > 0) options->resources["memoryMiB"] = *memory;
    if (*timeout > 0) options->resources["timeoutSeconds"] = *timeout;
    if (!read_env_options(*env, options->env)) {
      ctx.exit_code = 2;
      return;
    }
    for (const auto& s : options->secrets) {
      if (s.empty() || s.find('=') == std::string::npos || s.find('=') == 0 || s.back() == '=') {
        std::cerr << "lockroom: --secret wants NAME=HOST[,HOST...], got \"" << s << "\"\n";
        ctx.exit_code = 2;
        return;
      }
    }
    ctx.exit_code = run_acp(*options, *upstream_ca, *shared, ctx.log.level);
  });
}

}  // namespace lockroom::cli
