// lockroom serve; see serve.h.
#include "server/cli/serve.h"

#include <csignal>
#include <filesystem>
#include <memory>
#include <vector>

#include <spdlog/spdlog.h>
#include <uv.h>

#include "server/cli/command.h"
#include "server/cli/sandbox_config.h"
#include "server/common/paths.h"
#include "server/common/signal_watch.h"
#include "server/common/uv_handle.h"
#include "server/serve/bridge.h"
#include "server/serve/server_core.h"
#include "server/serve/session.h"
#include "server/serve/shared_server.h"

namespace lockroom::cli {

namespace {

// How `serve` runs (serve.h): in-process, as the shared server, or as a bridge to it.
int serve(const ServeOptions& options, const std::string& version, const std::vector<std::filesystem::path>& upstream_ca_files);

}  // namespace

int run_serve(const ServeOptions& options, const std::string& version) { return serve(options, version, {}); }

namespace {

// The editor on stdio, the sandboxes in this process: end of stdin ends everything.
int serve_standalone(const ServeOptions& options, const std::string& version, const std::vector<std::filesystem::path>& upstream_ca_files) {
  // A closed stdout must surface as EPIPE on write, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  uv_loop_t loop;
  uv_loop_init(&loop);
  int exit_code = 1;
  {
    core::ManagerConfig config = sandbox_config();
    config.upstream_ca_files = upstream_ca_files;
    serve::ServerCore core(&loop, config, serve::RouterOptions{});
    rpc::ConnectionOptions conn_options;
    conn_options.framing = options.framing;
    conn_options.max_message_bytes = options.max_message_bytes;
    conn_options.input_mirror = options.input_mirror;
    serve::Session session(core.services(protocol::ServerInfo{"lockroom", version}, options.test_mode), 1, conn_options, nullptr,
                           "the editor on stdio");
    SignalWatch* signals = nullptr;
    bool finishing = false;
    auto finish = [&](int code) {
      if (finishing) return;
      finishing = true;
      exit_code = code;
      if (signals) signals->close();
      // Sandboxes end first (their last notifications still reach the editor), then the pipe.
      core.manager.shutdown([&] { session.close("", [] {}); });
    };

    SignalWatch watch(&loop, [&](int signum) {
      spdlog::info("received signal {}; shutting down", signum);
      finish(session.lsp().lifecycle().exit_code());
    });
    signals = &watch;

    if (auto started = session.start(finish); !started) {
      spdlog::error("cannot start the server: {}", started.error().message);
      finish(1);
      exit_code = 1;
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    signals = nullptr;
  }
  // Destructors closed the remaining handles; let their close callbacks run.
  uv_run(&loop, UV_RUN_DEFAULT);
  if (int rc = uv_loop_close(&loop); rc != 0) spdlog::error("bug: handles left open at exit ({})", uv_strerror(rc));
  return exit_code;
}

std::string seconds_arg(std::chrono::milliseconds ms) { return fmt::format("{}", ms.count() / 1000.0); }

int serve(const ServeOptions& options, const std::string& version, const std::vector<std::filesystem::path>& upstream_ca_files) {
  Paths paths = default_paths();
  std::filesystem::path dir = options.server_dir.empty() ? server_dir(paths) : options.server_dir;
  if (options.mode == ServeMode::kServer) {
    core::ManagerConfig config = sandbox_config();
    config.upstream_ca_files = upstream_ca_files;
    serve::SharedServerOptions server;
    server.dir = dir;
    server.log = options.log_file.empty() ? paths.state / "server.log" : options.log_file;
    server.idle_exit = options.idle_exit;
    server.router.grace = options.detached_grace;
    server.router.changes_grace = options.detached_changes_grace;
    server.test_mode = options.test_mode;
    return serve::run_shared_server(server, std::move(config), protocol::ServerInfo{"lockroom", version});
  }
  if (options.mode == ServeMode::kStandalone) return serve_standalone(options, version, upstream_ca_files);

  serve::BridgeOptions bridge;
  bridge.dir = dir;
  bridge.log = paths.state / "server.log";
  bridge.version = version;
  bridge.framing = options.framing;
  bridge.max_message_bytes = options.max_message_bytes;
  // What a server this bridge starts is given (a running server keeps its own settings).
  bridge.server_args = {"--detached-grace", seconds_arg(options.detached_grace), "--detached-changes-grace",
                        seconds_arg(options.detached_changes_grace), "--idle-exit", seconds_arg(options.idle_exit),
                        "--log-level", options.log_level};
  for (const auto& ca : upstream_ca_files) {
    bridge.server_args.push_back("--upstream-ca");
    bridge.server_args.push_back(ca.string());
  }
  if (options.test_mode) bridge.server_args.push_back("--test-mode");
  return serve::run_bridge(bridge);
}

}  // namespace

void add_serve_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("serve", "serve JSON-RPC to an editor over stdin/stdout");
  auto options = std::make_shared<ServeOptions>();
  auto framing = std::make_shared<std::string>("lsp");
  static bool stdio_flag = false;  // accepted and ignored: stdio is the only transport
  cmd->add_flag("--stdio", stdio_flag, "talk over stdin/stdout (the only transport; accepted for editor clients)");
  cmd->add_option("--framing", *framing, "lsp (Content-Length headers) or ndjson (one message per line)")
      ->check(CLI::IsMember({"lsp", "ndjson"}))
      ->capture_default_str();
  cmd->add_option("--max-message-size", options->max_message_bytes, "largest accepted message, e.g. 64MiB")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 31));
  cmd->add_flag("--test-mode", options->test_mode, "deterministic logs and test/* methods, for transcript tests");
  cmd->add_option("--input-mirror", options->input_mirror,
                  "copy every byte read from the editor to this file, to replay a client's bug (tests/transcripts/README.md)");
  auto upstream_ca = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--upstream-ca", *upstream_ca,
                  "also trust the CAs in this PEM file for upstream HTTPS (e.g. a corporate CA; repeatable)")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  // The shared server (a window reload ends only the window's connection): server/serve/.
  auto standalone = std::make_shared<bool>(false);
  auto shared = std::make_shared<bool>(false);
  auto server = std::make_shared<bool>(false);
  auto server_dir = std::make_shared<std::string>();
  auto grace = std::make_shared<double>(15 * 60);
  auto changes_grace = std::make_shared<double>(24 * 3600);
  auto idle_exit = std::make_shared<double>(120);
  cmd->add_flag("--standalone", *standalone,
                "keep the sandboxes in this process: end of stdin ends them all (default with --test-mode)");
  cmd->add_flag("--shared", *shared, "use the per-user shared server even with --test-mode");
  cmd->add_flag("--server", *server, "be the per-user shared server (started by `serve --stdio` when there is none)");
  cmd->add_option("--server-dir", *server_dir,
                  "the shared server's folder (default: $LOCKROOM_SERVER_DIR, else $XDG_RUNTIME_DIR/lockroom, else <state dir>/server)");
  cmd->add_option("--detached-grace", *grace,
                  "seconds a sandbox whose connection ended is kept for a new one to attach it (for a server this starts)")
      ->check(CLI::Range(0.0, 365.0 * 86400))
      ->capture_default_str();
  cmd->add_option("--detached-changes-grace", *changes_grace,
                  "the same, for a sandbox holding changes not applied yet (counted from when it was detached)")
      ->check(CLI::Range(0.0, 365.0 * 86400))
      ->capture_default_str();
  cmd->add_option("--idle-exit", *idle_exit, "seconds the shared server waits with no connection and no sandbox before it exits")
      ->check(CLI::Range(0.0, 365.0 * 86400))
      ->capture_default_str();
  cmd->callback([&ctx, options, framing, upstream_ca, standalone, shared, server, server_dir, grace, changes_grace, idle_exit] {
    options->framing = *framing == "ndjson" ? rpc::FramingKind::kNdjson : rpc::FramingKind::kContentLength;
    auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000)); };
    options->mode = *server ? ServeMode::kServer
                    : (*standalone || (options->test_mode && !*shared)) ? ServeMode::kStandalone
                                                                       : ServeMode::kBridge;
    options->server_dir = *server_dir;
    options->detached_grace = ms(*grace);
    options->detached_changes_grace = ms(*changes_grace);
    options->idle_exit = ms(*idle_exit);
    options->log_level = ctx.log.level;
    options->log_file = ctx.log.file;
    if (options->test_mode) {
      ctx.log.deterministic = true;  // transcripts compare stderr text: no timestamps or pids
      (void)setup_logging(ctx.log);  // the same options were already accepted once
    }
    std::vector<std::filesystem::path> ca_files;
    for (const auto& file : *upstream_ca) ca_files.push_back(std::filesystem::absolute(file));
    ctx.exit_code = serve(*options, ctx.version, ca_files);
  });
}

}  // namespace lockroom::cli
