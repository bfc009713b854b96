// Sandbox: one running guest — its VM, its agent link, its processes, its limits.
//
// Made by the SandboxManager from a restored VM; lives in state `ready` until it is destroyed,
// hits its lifetime, or fails (QEMU exits, the channel breaks, the agent stops answering). Each
// process it starts is tracked until its exit is reported: exactly one `process_exited` per
// process, also when the sandbox goes away under it. Output is encoded as text or base64 per
// stream and counted against the per-process limit; past it the process is killed. Every limit
// met (output, lifetime, and the guest's own reports: disk, processes, memory) is reported once
// through SandboxEvents::limit_reached; the guest's reports are checked and rate-limited. A pty's
// output is limited per window instead (an interactive shell lives long). The agent's
// workspace.changed notifications become workspace_changed events (ChangeNotice: debounced,
// versioned). A process's exit is reported after all of its output the channel holds (flow
// control may hold some). Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/core/change_notice.h"
#include "server/core/guest_link.h"
#include "server/core/resources.h"
#include "server/core/sandbox_events.h"
#include "server/core/sandbox_state.h"
#include "server/core/sandbox_network.h"
#include "server/core/sandbox_workspace.h"
#include "server/vm/vm.h"

namespace lockroom::core {

struct ProcessSpec {
  std::vector<std::string> argv;
  std::optional<std::string> cwd;  // default: /workspace when the sandbox has a workspace, else the agent's (/)
  std::map<std::string, std::string> env;
  std::optional<std::pair<int, int>> pty;  // cols, rows
  ProcessOrigin origin = ProcessOrigin::kClient;
  std::string name;  // a kit service's name
  bool root = false;  // run as root; else as the guest's unprivileged user `agent`
};

// What sandbox/list says of a sandbox besides its state (set by the manager when it is created).
struct SandboxFacts {
  std::optional<std::string> workspace;  // the host folder copied in
  std::vector<std::string> kits;         // as named in the create request
  std::optional<std::string> audit_log;  // with networking
  std::string template_source;           // "memory", "cache", "booted", "workspace"
  std::string label;                     // the editor's, bounded and printable
};

class Sandbox {
 public:
  Sandbox(uv_loop_t* loop, std::string id, Resources limits, std::map<std::string, std::string> env, SandboxEvents& events);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Takes the restored VM and its agent link; the sandbox is `ready` from here on.
  void adopt(std::unique_ptr<vm::Vm> vm, std::unique_ptr<GuestLink> link);
  // Ends the sandbox: processes get their exits, the VM is killed, its state dir removed.
  // `done` runs when QEMU is gone. Safe to call in any state; later calls only add `done`.
  void stop(StopReason reason, const std::string& message, std::function<void()> done = {});
  // The VM exited (called by the manager's Vm callback).
  void vm_exited(const vm::VmExit& exit);
  // The agent link failed. When QEMU is dying the channel usually breaks first, so the sandbox
  // waits a moment for the VM's exit (reason guestCrashed) before failing it as channelError.
  void channel_failed(const std::string& message);

  void start_process(const std::string& process_id, const ProcessSpec& spec, std::function<void(Result<void>)> done);
  Result<void> write_stdin(const std::string& process_id, std::string_view bytes);
  Result<void> close_stdin(const std::string& process_id);
  void resize(const std::string& process_id, int cols, int rows, std::function<void(Result<void>)> done);
  void signal(const std::string& process_id, int signal, std::function<void(Result<void>)> done);
  // Flow control: while paused, the process's output is not taken from the guest (the channel's
  // credit stops it there); an exit that arrives meanwhile waits for what is still held.
  void pause_output(const std::string& process_id, bool paused);
  // The live processes and the last kMaxExitedKept exited ones, in start order.
  std::vector<ProcessInfo> processes() const;
  std::optional<ProcessInfo> process_info(const std::string& process_id) const;
  static constexpr std::size_t kMaxExitedKept = 64;
  // A pty process may write at most limits().max_output_bytes per window (fixed windows from its
  // start); a pipe process at most that in its whole life.
  static constexpr std::chrono::seconds kPtyOutputWindow{60};
  const SandboxFacts& facts() const { return facts_; }
  SandboxFacts& facts() { return facts_; }

  const std::string& id() const { return id_; }
  SandboxState state() const { return state_; }
  StopReason reason() const { return reason_; }
  const Resources& limits() const { return limits_; }
  std::size_t live_processes() const { return processes_.size(); }
  std::chrono::steady_clock::time_point created() const { return created_; }
  bool has_process(const std::string& process_id) const { return processes_.count(process_id) != 0; }
  bool has_workspace() const { return workspace_ != nullptr; }
  // The process whose guest pid this is ("" when none): names the program behind a connection.
  std::string process_id_of_pid(std::int64_t pid) const;
  // The workspace copied into this sandbox, if any (owned by the sandbox, gone when it stops).
  void attach_workspace(std::unique_ptr<SandboxWorkspace> workspace) { workspace_ = std::move(workspace); }
  // The workspace and the agent to act on it with, while the sandbox is ready.
  Result<std::pair<SandboxWorkspace*, channel::AgentClient*>> workspace();
  // The sandbox's egress (owned by the sandbox; goes before its agent link).
  void attach_network(std::unique_ptr<SandboxNetwork> network) { network_ = std::move(network); }
  SandboxNetwork* network() { return network_.get(); }
  // The agent while the guest link is up, else nullptr.
  channel::AgentClient* agent() { return link_ ? &link_->agent() : nullptr; }
  // The agent to read or write the guest's files with, while the sandbox is ready.
  Result<channel::AgentClient*> files();
  // Expires when the sandbox goes: guards work that outlives a callback.
  std::weak_ptr<bool> lifetime() const { return alive_; }
  // The QEMU process's pid while the VM runs, else 0.
  int qemu_pid() const { return vm_ ? vm_->pid() : 0; }

 private:
  struct Process;
  Process* find(const std::string& process_id);
  void on_output(const std::string& process_id, OutputStream stream, std::string_view bytes);
  void finish_process(const std::string& process_id, ProcessExit exit);
  void set_state(SandboxState state, StopReason reason, const std::string& message);
  void wind_down(StopReason reason, const std::string& message);
  void finalize();
  void arm_lifetime();
  void check_health();
  void report_limit(LimitEvent event);
  void on_exit(const std::string& process_id, ProcessExit exit);
  void on_guest_limit(const protocol::channel::LimitReached& note);
  Result<void> allowed(SandboxOp op) const { return check_allowed(op, state_, id_, reason_ == StopReason::kNone ? "" : std::string(reason_name(reason_))); }

  uv_loop_t* loop_;
  std::string id_;
  Resources limits_;
  std::map<std::string, std::string> env_;
  SandboxEvents& events_;
  SandboxState state_ = SandboxState::kCreating;
  StopReason reason_ = StopReason::kNone;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  std::unique_ptr<vm::Vm> vm_;
  std::unique_ptr<GuestLink> link_;
  std::unique_ptr<SandboxWorkspace> workspace_;  // before link_ goes: its operations use the agent
  std::unique_ptr<SandboxNetwork> network_;      // before link_ goes: its connections are the agent's
  std::map<std::string, std::unique_ptr<Process>> processes_;
  std::deque<ProcessInfo> exited_;  // the last kMaxExitedKept, oldest first
  std::unique_ptr<ChangeNotice> changes_;  // workspace.changed → workspace_changed, while the link is up
  SandboxFacts facts_;
  uv_timer_t* lifetime_ = nullptr;
  uv_timer_t* health_ = nullptr;
  uv_timer_t* channel_grace_ = nullptr;
  int missed_health_ = 0;
  bool health_in_flight_ = false;
  std::map<LimitKind, std::chrono::steady_clock::time_point> last_guest_limit_;  // when the guest last reported each kind
  std::vector<std::function<void()>> stopped_callbacks_;
  std::string stop_message_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::core
