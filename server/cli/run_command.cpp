// `lockroom run [--cpus N] [--memory MiB] [--timeout S] [--kit K…] -- CMD ARGS…`: CMD in a fresh sandbox.
//
// The terminal is passed through when stdin is a terminal (raw mode, a pty in the guest, window
// size kept in step), so an interactive agent CLI works; otherwise output is streamed and stdin
// is forwarded until it ends. lockroom exits with CMD's status (128+N when a signal ended it),
// 125 when the sandbox itself could not run it. With a workspace, its changes are reviewed
// (run_review.h) before the sandbox is destroyed; when they cannot be read, the sandbox's own git
// writes them as a patch, so the agent's work is not lost with the sandbox.
#include <csignal>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <iostream>
#include <optional>

#include <spdlog/spdlog.h>

#include "server/api/control_endpoints.h"
#include "server/cli/command.h"
#include "server/cli/env_option.h"
#include "server/cli/logging.h"
#include "server/cli/fd_flags.h"
#include "server/cli/run_network.h"
#include "server/cli/run_review.h"
#include "server/cli/sandbox_config.h"
#include "server/core/kit_request.h"
#include "server/core/kit_setup.h"
#include "server/core/process_watch.h"
#include "server/common/uv_handle.h"
#include "server/core/sandbox_manager.h"
#include "server/rpc/stdio_transport.h"

namespace lockroom::cli {

namespace {

constexpr int kSandboxFailed = 125;
constexpr std::size_t kMaxGuestPatchBytes = std::size_t(256) << 20;  // the guest process's own output limit

struct RunOptions {
  std::int64_t cpus = 0, memory_mib = 0, timeout_s = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string workspace;  // the folder copied in at /workspace; empty: none
  ReviewChoice review;
  bool network = true;             // egress through the policy proxy (default allow list)
  bool root = false;               // the command runs as root, not as the guest's user `agent`
  std::vector<std::string> allow;  // extra hosts to allow: HOST or HOST:PORT
  std::vector<std::string> kits;   // names or kit files (kit_catalog.h)
  std::vector<std::string> upstream_ca;  // PEM files of further CAs to trust for upstream HTTPS
};

// The manager's settings for this run: the machine's, plus the run's upstream CAs.
core::ManagerConfig run_config(const RunOptions& options) {
  core::ManagerConfig config = sandbox_config();
  for (const auto& file : options.upstream_ca) config.upstream_ca_files.push_back(std::filesystem::absolute(file));
  return config;
}

// Puts the terminal in raw mode for the life of the object.
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(fd_, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(fd_, TCSANOW, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

std::pair<int, int> window_size() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return {ws.ws_col, ws.ws_row};
  return {80, 24};
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

class RunSession final : public core::SandboxEvents {
 public:
  RunSession(uv_loop_t* loop, const RunOptions& options) : RunSession(loop, options, run_config(options)) {}
  // The sandbox also serves `lockroom diff` / `lockroom apply` from other processes while it runs.
  RunSession(uv_loop_t* loop, RunOptions options, core::ManagerConfig config)
      : loop_(loop), options_(std::move(options)), control_(loop, config.paths.state, *this), watch_(control_), manager_(loop, config, watch_) {
    control_.attach(manager_);
  }

  int run() {
    interactive_ = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    core::CreateRequest request;
    if (options_.cpus) request.resources.cpus = options_.cpus;
    if (options_.memory_mib) request.resources.memory_mib = options_.memory_mib;
    if (options_.timeout_s) request.resources.lifetime_seconds = options_.timeout_s;
    request.env = options_.env;
    if (!options_.workspace.empty()) request.workspace = core::WorkspaceRequest{options_.workspace, {}, {}};
    if (options_.network) {
      auto network = network_request(options_.allow);
      if (!network) {
        std::cerr << "lockroom: " << network.error().message << std::endl;
        exit_code_ = 2;
        return exit_code_;
      }
      request.network = std::move(*network);
    }
    if (!options_.kits.empty()) {
      auto plan = kits::resolve_kits(kits::KitCatalog::standard(options_.workspace), options_.kits);
      if (plan) {
        if (auto supported = core::check_kit_plan_supported(*plan); !supported) plan = supported.error();
      }
      if (plan) {
        if (auto applied = core::apply_kit_plan(*plan, request); !applied) plan = applied.error();
      }
      if (!plan) {
        std::cerr << "lockroom: " << plan.error().message << std::endl;
        exit_code_ = 2;
        return exit_code_;
      }
      kits_ = std::move(*plan);
    }
    core::finish_network(request);
    manager_.create(request, [](const std::string& message, int) { std::cerr << "lockroom: " << message << std::endl; },
                    [this](Result<core::CreateResult> created) { on_created(std::move(created)); });
    uv_run(loop_, UV_RUN_DEFAULT);
    return exit_code_;
  }

  void state_changed(const std::string& id, core::SandboxState state, core::StopReason reason, const std::string& message) override {
    bool ended_under_us = state == core::SandboxState::kFailed || reason == core::StopReason::kLifetimeLimit ||
                          reason == core::StopReason::kKilled;
    if (ended_under_us && !told_why_) {
      told_why_ = true;
      std::cerr << "\r\nlockroom: sandbox " << id << " " << (reason == core::StopReason::kNone ? "failed" : core::reason_name(reason))
                << ": " << message << std::endl;
    }
    if (state == core::SandboxState::kFailed && !exited_) exit_code_ = kSandboxFailed;
  }
  void process_output(const std::string&, core::OutputStream, const core::OutputChunk&) override {}
  void process_bytes(const std::string&, core::OutputStream stream, std::string_view bytes) override {
    write_all(stream == core::OutputStream::kStderr ? STDERR_FILENO : STDOUT_FILENO, bytes);
  }
  void process_exited(const std::string&, const core::ProcessExit& exit) override {
    exited_ = true;
    exit_code_ = exit.exit_code ? *exit.exit_code : 128 + exit.signal.value_or(9);
    if (exit.reason == core::ProcessEndReason::kOutputLimit)
      std::cerr << "\r\nlockroom: the command passed its output limit and was killed" << std::endl;
    stop_input();
    if (exit.reason == core::ProcessEndReason::kSandboxGone || options_.workspace.empty()) return finish();
    review_then_finish();
  }

 private:
  void on_created(Result<core::CreateResult> created) {
    if (!created) {
      std::cerr << "lockroom: " << created.error().message << std::endl;
      exit_code_ = kSandboxFailed;
      return finish();
    }
    sandbox_id_ = created->sandbox_id;
    audit_log_ = created->audit_log;
    spdlog::debug("sandbox {} ready in {} ms", sandbox_id_, created->timings.total_ms);
    if (created->workspace && !created->workspace->snapshot.withheld.empty()) {
      const auto& withheld = created->workspace->snapshot.withheld;
      std::cerr << "lockroom: kept out of the sandbox as secrets: " << withheld.front();
      for (std::size_t i = 1; i < withheld.size() && i < 5; ++i) std::cerr << ", " << withheld[i];
      if (withheld.size() > 5) std::cerr << " and " << withheld.size() - 5 << " more";
      std::cerr << std::endl;
    }
    if (kits_ && !kits_->empty()) {
      core::KitSetupHooks hooks;
      hooks.step = [](const std::string& message) { std::cerr << "lockroom: " << message << std::endl; };
      hooks.output = [](std::string_view bytes) { write_all(STDERR_FILENO, bytes); };
      bool has_workspace = created->workspace.has_value();
      kits::KitPlan plan = std::move(*kits_);
      kits_.reset();
      core::KitSetup::run(loop_, manager_, watch_, sandbox_id_, std::move(plan), has_workspace, std::move(hooks),
                          [this, created = std::move(*created)](Result<core::KitSetupReport> report) mutable {
                            if (!report) {
                              std::cerr << "lockroom: " << report.error().message << std::endl;
                              exit_code_ = kSandboxFailed;
                              return finish();
                            }
                            start_command(created);
                          });
      return;
    }
    start_command(*created);
  }

  void start_command(const core::CreateResult& created) {
    std::optional<std::string> cwd;
    if (created.workspace) cwd = core::SandboxWorkspace::kGuestPath;
    core::ProcessSpec spec{options_.argv, cwd, {}, std::nullopt};
    if (interactive_) spec.pty = window_size();
    spec.root = options_.root;
    manager_.start_process(sandbox_id_, spec, [this](Result<std::string> pid) {
      if (!pid) {
        std::cerr << "lockroom: cannot start " << options_.argv[0] << ": " << pid.error().message << std::endl;
        exit_code_ = kSandboxFailed;
        return finish();
      }
      process_id_ = *pid;
      hold_terminal_logging(true);  // the terminal is the command's until it ends
      forward_input();
    });
  }

  void forward_input() {
    if (interactive_) {
      raw_.emplace(STDIN_FILENO);
      winch_ = new_handle<uv_signal_t>(this);
      uv_signal_init(loop_, winch_);
      uv_signal_start(winch_, [](uv_signal_t* h, int) {
        auto* self = static_cast<RunSession*>(h->data);
        if (!self || self->process_id_.empty()) return;
        auto [cols, rows] = window_size();
        self->manager_.resize(self->process_id_, cols, rows, [](Result<void>) {});
      }, SIGWINCH);
    }
    stdio_flags_.save({STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO});
    stdin_ = std::make_unique<rpc::StdioTransport>(loop_, STDIN_FILENO, STDOUT_FILENO);
    auto started = stdin_->start(rpc::StdioTransport::Callbacks{
        [this](std::string_view bytes) {
          if (!process_id_.empty()) (void)manager_.write_stdin(process_id_, bytes);
        },
        [this] {
          if (!process_id_.empty() && !interactive_) (void)manager_.close_stdin(process_id_);
        },
        [](const std::string&) {},
    });
    if (!started && !process_id_.empty()) (void)manager_.close_stdin(process_id_);
  }

  // The sandbox's changes to the workspace: fetched, shown, then applied/saved/discarded.
  void review_then_finish() {
    auto ws = manager_.workspace(sandbox_id_);
    if (!ws) {
      std::cerr << "lockroom: cannot read the sandbox's changes: " << ws.error().message << std::endl;
      return finish();
    }
    core::SandboxWorkspace* workspace = ws->first;
    workspace->refresh(*ws->second, [this, workspace](Result<core::ChangeSet> set) {
      if (!set) {
        std::cerr << "lockroom: cannot read the sandbox's changes: " << set.error().message << std::endl;
        if (exit_code_ == 0) exit_code_ = 1;
        return save_guest_patch();
      }
      stdio_flags_.restore();
      ReviewContext context = review_context(*workspace);
      context.answers_fd = interactive_ ? STDIN_FILENO : -1;
      context.color = interactive_;
      int status = review_changes(*set, options_.review, context);
      if (status && exit_code_ == 0) exit_code_ = status;
      finish();
    });
  }

  ReviewContext review_context(const core::SandboxWorkspace& workspace) const {
    ReviewContext context;
    context.host_path = workspace.host_path();
    context.base = &workspace.base();
    context.patch_dir = default_paths().cache / "patches";
    context.sandbox_id = sandbox_id_;
    return context;
  }

  // When lockroom cannot review the changes, git in the sandbox writes them as a patch against
  // the snapshot (its HEAD), which is saved in the patches folder. Made by the guest, so not
  // checked by lockroom: the message says to read it before applying it.
  void save_guest_patch() {
    auto ws = manager_.workspace(sandbox_id_);
    if (!ws) return finish();
    const core::SandboxWorkspace* workspace = ws->first;
    core::ProcessSpec spec{{"sh", "-c",
                            "git add -A . && git -c core.pager=cat diff --cached --binary --full-index --no-color "
                            "--no-ext-diff --no-textconv HEAD --"},
                           std::string(core::SandboxWorkspace::kGuestPath), {}, std::nullopt};
    std::cerr << "lockroom: saving the changes with git in the sandbox instead" << std::endl;
    manager_.start_process(sandbox_id_, spec, [this, workspace](Result<std::string> pid) {
      if (!pid) {
        std::cerr << "lockroom: cannot run git in the sandbox: " << pid.error().message << std::endl;
        return finish();
      }
      auto patch = std::make_shared<std::string>();
      auto errors = std::make_shared<std::string>();
      core::ProcessWatch::Watcher watcher;
      watcher.output = [patch, errors](core::OutputStream stream, std::string_view bytes) {
        std::string& into = stream == core::OutputStream::kStderr ? *errors : *patch;
        if (into.size() < kMaxGuestPatchBytes) into.append(bytes.substr(0, kMaxGuestPatchBytes - into.size()));
      };
      watcher.exited = [this, workspace, patch, errors](const core::ProcessExit& exit) {
        stdio_flags_.restore();
        bool whole = patch->size() < kMaxGuestPatchBytes && exit.reason == core::ProcessEndReason::kNone;
        if (exit.exit_code != 0 || !whole) {
          std::cerr << "lockroom: git in the sandbox could not write the patch"
                    << (whole ? "" : " (it passed its size limit)") << ": " << errors->substr(0, 2000) << std::endl;
        } else if (patch->empty()) {
          std::cerr << "lockroom: git in the sandbox sees no changes" << std::endl;
        } else {
          ReviewContext context = review_context(*workspace);
          save_patch_text(*patch, fallback_patch_file(context), context,
                          "the changes git in the sandbox wrote (not checked by lockroom: read them before you apply them)");
        }
        finish();
      };
      watch_.watch(*pid, std::move(watcher));
    });
  }

  void stop_input() {
    raw_.reset();
    hold_terminal_logging(false);
    close_handle(winch_);
    if (stdin_) {
      auto* transport = stdin_.release();
      transport->close([this, transport] {
        delete transport;
        stdio_flags_.restore();
      });
    }
  }

  void finish() {
    if (finishing_) return;
    finishing_ = true;
    stop_input();
    if (audit_log_) print_denied_summary(*audit_log_);
    manager_.shutdown([] {});
  }

  uv_loop_t* loop_;
  RunOptions options_;
  api::ControlEndpoints control_;  // before manager_: the manager reports through it
  core::ProcessWatch watch_;      // the kits' setup processes are ours, not the terminal's
  core::SandboxManager manager_;
  std::optional<kits::KitPlan> kits_;
  bool interactive_ = false;
  bool exited_ = false;
  bool told_why_ = false;  // why the sandbox ended under the command was printed
  bool finishing_ = false;
  int exit_code_ = kSandboxFailed;
  std::string sandbox_id_;
  std::string process_id_;
  std::optional<std::filesystem::path> audit_log_;
  std::optional<RawTerminal> raw_;
  FdFlags stdio_flags_;  // stdin's, stdout's and stderr's, as they were before stdin_ opened them
  std::unique_ptr<rpc::StdioTransport> stdin_;
  uv_signal_t* winch_ = nullptr;
};

}  // namespace

void add_run_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("run", "run a command in a fresh sandbox and exit with its status");
  auto options = std::make_shared<RunOptions>();
  auto env = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--cpus", options->cpus, "vCPUs for the guest (default 1)");
  cmd->add_option("--memory", options->memory_mib, "guest memory in MiB (default 512)");
  cmd->add_option("--timeout", options->timeout_s, "end the sandbox after this many seconds (default 3600)");
  cmd->add_option("-e,--env", *env, "NAME=VALUE for the command's environment (repeatable)")->allow_extra_args(false);
  auto no_workspace = std::make_shared<bool>(false);
  auto apply = std::make_shared<bool>(false);
  auto discard = std::make_shared<bool>(false);
  cmd->add_option("--workspace", options->workspace, "the folder copied in at /workspace (default: the current folder)");
  cmd->add_flag("--no-workspace", *no_workspace, "copy no folder in; the command starts in the user's home");
  cmd->add_flag("--root", options->root, "run the command as root in the guest (default: the unprivileged user agent, who owns /workspace)");
  auto* apply_flag = cmd->add_flag("--apply", *apply, "apply the changes to the workspace when the command ends");
  auto* branch_opt = cmd->add_option("--branch", options->review.branch, "save the changes as the branch lockroom/NAME instead");
  auto* patch_opt = cmd->add_option("--patch", options->review.patch_file, "save the changes as a patch file instead");
  auto* discard_flag = cmd->add_flag("--discard", *discard, "throw the changes away");
  apply_flag->excludes(branch_opt)->excludes(patch_opt)->excludes(discard_flag);
  branch_opt->excludes(patch_opt)->excludes(discard_flag);
  patch_opt->excludes(discard_flag);
  auto no_network = std::make_shared<bool>(false);
  cmd->add_flag("--no-network", *no_network, "no way out at all (default: through lockroom's policy proxy)");
  cmd->add_option("--kit", options->kits, "give the sandbox this kit (repeatable): a name from `lockroom kit ls`, or a kit file")
      ->allow_extra_args(false);
  cmd->add_option("--upstream-ca", options->upstream_ca, "also trust the CAs in this PEM file for upstream HTTPS (e.g. a corporate CA; repeatable)")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  cmd->add_option("--allow", options->allow, "also allow HOST or HOST:PORT (repeatable); see protocol/network.md")
      ->allow_extra_args(false);
  cmd->add_option("command", options->argv, "the command and its arguments, after --")->required();
  cmd->callback([&ctx, options, env, no_workspace, apply, discard, no_network] {
    options->network = !*no_network;
    using Mode = ReviewChoice::Mode;
    if (*apply) options->review.mode = Mode::kApply;
    else if (!options->review.branch.empty()) options->review.mode = Mode::kBranch;
    else if (!options->review.patch_file.empty()) options->review.mode = Mode::kPatch;
    else if (*discard) options->review.mode = Mode::kDiscard;
    if (*no_workspace) options->workspace.clear();
    else if (options->workspace.empty()) options->workspace = std::filesystem::current_path().string();
    if (!read_env_options(*env, options->env)) {
      ctx.exit_code = 2;
      return;
    }
    std::signal(SIGPIPE, SIG_IGN);
    uv_loop_t loop;
    uv_loop_init(&loop);
    {
      RunSession session(&loop, *options);
      ctx.exit_code = session.run();
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) spdlog::error("bug: handles left open at exit");
  });
}

}  // namespace lockroom::cli
