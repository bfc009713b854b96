// lockroom serve; see serve.h.
#include "server/cli/serve.h"

#include <csignal>
#include <filesystem>
#include <memory>
#include <vector>

#include <spdlog/spdlog.h>
#include <uv.h>

#include "server/api/control_endpoints.h"
#include "server/api/sandbox_methods.h"
#include "server/api/kit_methods.h"
#include "server/api/network_methods.h"
#include "server/api/workspace_methods.h"
#include "server/cli/command.h"
#include "server/cli/sandbox_config.h"
#include "server/common/uv_handle.h"
#include "server/rpc/builtin_methods.h"
#include "server/rpc/connection.h"
#include "server/rpc/lsp_server.h"

namespace lockroom::cli {

namespace {

// Stops the server gracefully on SIGTERM, SIGINT and SIGHUP.
class SignalWatch {
 public:
  SignalWatch(uv_loop_t* loop, std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
    for (int signum : {SIGTERM, SIGINT, SIGHUP}) {
      auto* handle = new_handle<uv_signal_t>(this);
      uv_signal_init(loop, handle);
      uv_signal_start(handle, [](uv_signal_t* h, int signum) {
        if (auto* self = static_cast<SignalWatch*>(h->data)) self->on_signal_(signum);
      }, signum);
      handles_.push_back(handle);
    }
  }
  ~SignalWatch() { close(); }
  void close() {
    for (auto*& h : handles_) close_handle(h);
    handles_.clear();
  }

 private:
  std::function<void(int)> on_signal_;
  std::vector<uv_signal_t*> handles_;
};

// run_serve with the settings that ServeOptions does not carry (yet): the upstream CA files.
int serve(const ServeOptions& options, const std::string& version, const std::vector<std::filesystem::path>& upstream_ca_files);

}  // namespace

int run_serve(const ServeOptions& options, const std::string& version) { return serve(options, version, {}); }

namespace {

int serve(const ServeOptions& options, const std::string& version, const std::vector<std::filesystem::path>& upstream_ca_files) {
  // A closed stdout must surface as EPIPE on write, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  uv_loop_t loop;
  uv_loop_init(&loop);
  int exit_code = 1;
  {
    rpc::ConnectionOptions conn_options;
    conn_options.framing = options.framing;
    conn_options.max_message_bytes = options.max_message_bytes;
    conn_options.input_mirror = options.input_mirror;
    rpc::Connection connection(&loop, conn_options);
    SignalWatch* signals = nullptr;
    bool finishing = false;

    api::SandboxMethods events(connection);
    core::ManagerConfig config = sandbox_config();
    config.upstream_ca_files = upstream_ca_files;
    // Each sandbox also serves `lockroom diff` / `lockroom apply` from other processes.
    api::ControlEndpoints control(&loop, config.paths.state, events);
    core::ProcessWatch processes(control);  // the kits' setup processes are lockroom's, not the editor's
    core::SandboxManager manager(&loop, config, processes);
    control.attach(manager);
    auto finish = [&](int code) {
      if (finishing) return;
      finishing = true;
      exit_code = code;
      if (signals) signals->close();
      // Sandboxes end first (their last notifications still reach the editor), then the pipe.
      manager.shutdown([&] { connection.close([] {}); });
    };
    rpc::LspServer server(connection, protocol::ServerInfo{"lockroom", version}, finish);
    rpc::register_builtin_methods(connection);
    events.bind(manager, processes);
    api::bind_workspace_methods(connection, manager);
    api::bind_network_methods(connection, manager);
    api::bind_kit_methods(connection.dispatcher(), &loop);
    events.set_client_can_approve([&server] { return server.client().network_approval; });
    if (options.test_mode) rpc::register_test_methods(connection);

    SignalWatch watch(&loop, [&](int signum) {
      spdlog::info("received signal {}; shutting down", signum);
      finish(server.lifecycle().exit_code());
    });
    signals = &watch;

    if (auto started = connection.start([&] { server.editor_gone(); }); !started) {
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
  cmd->callback([&ctx, options, framing, upstream_ca] {
    options->framing = *framing == "ndjson" ? rpc::FramingKind::kNdjson : rpc::FramingKind::kContentLength;
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
