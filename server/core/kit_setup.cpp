// Running a kit plan in a new sandbox; see kit_setup.h.
#include "server/core/kit_setup.h"

#include <csignal>
#include <cstdio>

#include "server/common/uv_handle.h"

namespace lockroom::core {

namespace {

std::int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

std::string describe_exit(const ProcessExit& exit) {
  if (exit.signal) return "was killed by signal " + std::to_string(*exit.signal);
  return "exited with code " + std::to_string(exit.exit_code.value_or(-1));
}

// A one-shot timer that outlives nothing: closed when the owner lets go of it.
struct Timer {
  uv_timer_t* handle = nullptr;
  std::function<void()> fire;
  Timer(uv_loop_t* loop, std::chrono::milliseconds after, std::function<void()> fn) : fire(std::move(fn)) {
    handle = new_handle<uv_timer_t>(this);
    uv_timer_init(loop, handle);
    uv_timer_start(handle, [](uv_timer_t* t) {
      if (auto* self = static_cast<Timer*>(t->data)) self->fire();
    }, static_cast<std::uint64_t>(after.count()), 0);
  }
  ~Timer() { close_handle(handle); }
};

}  // namespace

void KitSetup::run(uv_loop_t* loop, SandboxManager& manager, ProcessWatch& watch, std::string sandbox_id, kits::KitPlan plan,
                   bool has_workspace, KitSetupHooks hooks, Done done) {
  auto setup = std::make_shared<KitSetup>(loop, manager, watch, std::move(sandbox_id), std::move(plan), has_workspace,
                                          std::move(hooks), std::move(done));
  setup->next();
}

KitSetup::KitSetup(uv_loop_t* loop, SandboxManager& manager, ProcessWatch& watch, std::string sandbox_id, kits::KitPlan plan,
                   bool has_workspace, KitSetupHooks hooks, Done done)
    : loop_(loop), manager_(manager), watch_(watch), sandbox_id_(std::move(sandbox_id)), plan_(std::move(plan)),
      has_workspace_(has_workspace), hooks_(std::move(hooks)), done_(std::move(done)) {}

std::string KitSetup::directory(const std::string& cwd) const {
  if (!has_workspace_ && (cwd == "/workspace" || cwd.rfind("/workspace/", 0) == 0)) return "/";
  return cwd;
}

void KitSetup::next() {
  std::size_t files = plan_.files.size();
  if (step_ < files) return write_file(plan_.files[step_++]);
  if (step_ < files + plan_.setup.size()) {
    const kits::KitCommand& command = plan_.setup[step_ - files];
    ++step_;
    if (hooks_.step)
      hooks_.step("kit " + command.kit + ": " + command.run + " (" + std::to_string(step_ - files) + "/" + std::to_string(plan_.setup.size()) + ")");
    return run_command(command);
  }
  start_services(0);
}

void KitSetup::started(Result<std::string> process_id, std::string what, std::function<void(const std::string&)> then) {
  if (!process_id) return finish(make_error(process_id.error().code, "kit setup could not start " + what + ": " + process_id.error().message));
  then(*process_id);
}

void KitSetup::write_file(const kits::KitFile& file) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%o", file.mode);
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\" && chmod \"$2\" \"$1\"", "sh", file.path, mode};
  spec.cwd = "/";
  spec.origin = ProcessOrigin::kKitSetup;
  spec.root = file.user == kits::KitUser::kRoot;  // what it makes belongs to the user that writes it
  std::string what = "the kit file " + file.path;
  auto self = shared_from_this();
  manager_.start_process(sandbox_id_, spec, [self, what, content = file.content](Result<std::string> r) {
    self->started(std::move(r), "a writer for " + what, [self, what, content](const std::string& pid) {
      self->tail_.clear();
      self->watch_.watch(pid, {[self](OutputStream, std::string_view bytes) { self->tail_.append(bytes.substr(0, kKitFailureTailBytes)); },
                               [self, what](const ProcessExit& exit) {
                                 if (exit.exit_code == 0) return self->next();
                                 self->finish(make_error(ErrorCode::kUnavailable, "kit setup could not write " + what + ": " +
                                                                                       self->tail_.substr(0, 500)));
                               }});
      if (auto w = self->manager_.write_stdin(pid, content); !w) return self->finish(w.error());
      if (auto c = self->manager_.close_stdin(pid); !c) return self->finish(c.error());
    });
  });
}

void KitSetup::run_command(const kits::KitCommand& command) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", command.run};
  spec.cwd = directory(command.cwd);
  spec.origin = ProcessOrigin::kKitSetup;
  spec.root = command.user == kits::KitUser::kRoot;
  std::string what = "`" + command.run + "` (kit " + command.kit + ")";
  auto self = shared_from_this();
  auto timeout = std::chrono::seconds(command.timeout_seconds);
  manager_.start_process(sandbox_id_, spec, [self, what, timeout](Result<std::string> r) {
    self->started(std::move(r), what, [self, what, timeout](const std::string& pid) {
      self->tail_.clear();
      auto timed_out = std::make_shared<bool>(false);
      auto timer = std::make_shared<Timer>(self->loop_, timeout, [self, pid, timed_out] {
        *timed_out = true;
        self->manager_.signal(pid, SIGKILL, [](Result<void>) {});
      });
      self->watch_.watch(pid, {[self](OutputStream, std::string_view bytes) {
                                 if (self->hooks_.output) self->hooks_.output(bytes);
                                 self->tail_.append(bytes);
                                 if (self->tail_.size() > 2 * kKitFailureTailBytes) self->tail_.erase(0, self->tail_.size() - kKitFailureTailBytes);
                               },
                               [self, what, timer, timed_out, timeout](const ProcessExit& exit) {
                                 (void)timer;  // kept alive until the command ends
                                 if (exit.exit_code == 0 && !*timed_out) return self->next();
                                 std::string tail = self->tail_.size() > kKitFailureTailBytes
                                                        ? self->tail_.substr(self->tail_.size() - kKitFailureTailBytes)
                                                        : self->tail_;
                                 std::string why = *timed_out ? "did not finish within " + std::to_string(timeout.count()) + " s and was killed"
                                                              : describe_exit(exit);
                                 self->finish(make_error(ErrorCode::kUnavailable, "kit setup failed: " + what + " " + why +
                                                                                       (tail.empty() ? std::string(" (no output)") : "; its last output:\n" + tail)));
                               }});
    });
  });
}

void KitSetup::start_services(std::size_t index) {
  if (index == plan_.services.size()) return finish({});
  const kits::KitService& service = plan_.services[index];
  if (hooks_.step) hooks_.step("kit " + service.kit + ": starting service " + service.name);
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "exec " + service.run};
  spec.cwd = directory(service.cwd);
  spec.origin = ProcessOrigin::kKitService;
  spec.name = service.name;
  spec.root = service.user == kits::KitUser::kRoot;
  auto self = shared_from_this();
  manager_.start_process(sandbox_id_, spec, [self, index](Result<std::string> r) {
    const kits::KitService& s = self->plan_.services[index];
    self->started(std::move(r), "the service " + s.name + " (kit " + s.kit + ")", [self, index](const std::string& pid) {
      const kits::KitService& started = self->plan_.services[index];
      self->report_.services.push_back({started.name, started.kit, pid});
      self->start_services(index + 1);
    });
  });
}

void KitSetup::finish(Result<void> result) {
  if (!done_) return;
  Done done = std::move(done_);
  done_ = nullptr;
  report_.setup_ms = ms_since(started_);
  if (!result) return done(result.error());
  done(std::move(report_));
}

}  // namespace lockroom::core
