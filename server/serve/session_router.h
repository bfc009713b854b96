// SessionRouter: which editor connection owns which sandbox in a shared lockroom server, and
// what happens to a sandbox whose connection ended.
//
// One SandboxManager serves every connection of a `lockroom serve` process (server/serve/
// shared_server.h); the manager's events come here (after ProcessWatch and ControlEndpoints) and
// go to the SandboxEvents of the connection that owns the sandbox — a process's sandbox is
// found with RouterHost::sandbox_of. A sandbox becomes a connection's when its sandbox/create
// answers there (claim) or when the connection attaches it (sandbox/attach). When a connection
// ends, its sandboxes are *detached*: they keep running, their events are kept in a
// ReplayBuffer, network approvals are answered "not asked" (reason noEditor), and a grace timer
// runs. When it fires, the host is asked (one changes listing) whether the sandbox holds
// changes not applied yet: without, it is destroyed (reason detachedTimeout); with, it is kept
// until `changes_grace` after it was detached, then destroyed the same way. Attaching a
// detached sandbox stops the timer and hands over what was kept. A sandbox that ends on its own
// while detached is forgotten. Loop thread only.
//
// A new kind of core event must be routed here (and kept in the ReplayBuffer) by hand: the
// router is the one SandboxEvents that cannot forward what it does not know, since it has to
// know the event's sandbox to pick the connection; an event it does not override is dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <uv.h>

#include "server/common/result.h"
#include "server/core/sandbox_events.h"
#include "server/serve/replay_buffer.h"

namespace lockroom::serve {

struct RouterOptions {
  // How long a detached sandbox is kept without unapplied changes, and with them (from detach).
  std::chrono::milliseconds grace = std::chrono::minutes(15);
  std::chrono::milliseconds changes_grace = std::chrono::hours(24);
  ReplayLimits replay;
};

// What the router needs of the sandbox manager (an interface, so the router is tested alone).
class RouterHost {
 public:
  virtual ~RouterHost() = default;
  virtual std::optional<std::string> sandbox_of(const std::string& process_id) const = 0;
  // Whether the sandbox's workspace holds changes not applied to the host (false without a
  // workspace, or when it cannot tell); may answer later.
  virtual void has_unapplied_changes(const std::string& sandbox_id, std::function<void(bool)> done) = 0;
  // Ends a sandbox nobody re-attached (reason detachedTimeout, `message` says why).
  virtual void destroy_detached(const std::string& sandbox_id, const std::string& message) = 0;
};

using SessionId = std::uint64_t;

// A process the attaching editor should know about: running, or ended while detached.
struct AttachedProcess {
  std::string process_id;
  bool running = true;
  std::uint64_t dropped_bytes = 0;  // output lost to the replay bound
};

struct Attachment {
  std::vector<AttachedProcess> processes;
  ReplayStats stats;
  std::list<ReplayEvent> replay;  // to send, in order, after the answer (replay_to())
  std::int64_t detached_ms = 0;   // how long it was detached
};

class SessionRouter final : public core::SandboxEvents {
 public:
  SessionRouter(uv_loop_t* loop, RouterHost& host, RouterOptions options);
  ~SessionRouter() override;
  SessionRouter(const SessionRouter&) = delete;
  SessionRouter& operator=(const SessionRouter&) = delete;

  // A connection and where its events go; `label` names it in messages ("vscode (connection 3)").
  void add_session(SessionId id, core::SandboxEvents& events, std::string label);
  // The connection ended: its sandboxes are detached.
  void remove_session(SessionId id);
  std::size_t sessions() const { return sessions_.size(); }
  // Hooks the server watches to exit when idle: a session or a sandbox went.
  void on_change(std::function<void()> fn) { on_change_ = std::move(fn); }

  // Sandbox/create answered on `id`: the sandbox is its. False when that connection is gone
  // (the caller then destroys the sandbox: nobody has its id).
  bool claim(SessionId id, const std::string& sandbox_id);
  // A process the sandbox's editor was told of (process/start's answer, a kit's service).
  void process_started(const std::string& sandbox_id, const std::string& process_id);

  enum class Relation { kMine, kDetached, kOther, kUnknown };
  Relation relation(SessionId id, const std::string& sandbox_id) const;
  std::size_t detached() const { return detached_.size(); }
  // How long a detached sandbox has been detached, in ms.
  std::optional<std::int64_t> detached_ms(const std::string& sandbox_id) const;

  // Makes a detached sandbox `id`'s. Refused (wrongState) when another live connection has it,
  // notFound when the router never heard of it.
  Result<Attachment> attach(SessionId id, const std::string& sandbox_id);
  // Sends what an attach handed over to the session's events, in order.
  void replay_to(SessionId id, const std::string& sandbox_id, std::list<ReplayEvent> events);

  // core::SandboxEvents, routed.
  void state_changed(const std::string& sandbox_id, core::SandboxState state, core::StopReason reason, const std::string& message) override;
  void process_output(const std::string& process_id, core::OutputStream stream, const core::OutputChunk& chunk) override;
  void process_bytes(const std::string& process_id, core::OutputStream stream, std::string_view bytes) override;
  void process_exited(const std::string& process_id, const core::ProcessExit& exit) override;
  void limit_reached(const std::string& sandbox_id, const core::LimitEvent& event) override;
  void guest_misbehaved(const std::string& sandbox_id, const core::MisbehaviourEvent& event) override;
  void network_event(const std::string& sandbox_id, const egress::AuditRecord& record) override;
  // Told to the owner only: an editor that attaches later asks process/list and changes/list
  // and network/policy for the present state instead.
  void process_started(const core::ProcessInfo& info) override;
  void workspace_changed(const std::string& sandbox_id, std::uint64_t version) override;
  void network_policy_changed(const std::string& sandbox_id, const egress::Policy& policy, core::PolicyChangeCause cause) override;
  void approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) override;

 private:
  struct Session {
    core::SandboxEvents* events;
    std::string label;
  };
  struct Detached {
    ReplayBuffer buffer;
    std::chrono::steady_clock::time_point since;
    uv_timer_t* timer = nullptr;
    std::uint64_t generation = 0;  // an answer of has_unapplied_changes for an older detach is ignored
    bool checked = false;          // the grace ran out once and changes were found
  };
  core::SandboxEvents* owner_events(const std::string& sandbox_id);
  Detached* detached_of(const std::string& sandbox_id);
  std::optional<std::string> sandbox_of_process(const std::string& process_id) const;
  void detach(const std::string& sandbox_id);
  void arm(const std::string& sandbox_id, std::chrono::milliseconds after);
  void grace_over(const std::string& sandbox_id, std::uint64_t generation);
  void forget(const std::string& sandbox_id);
  void changed() {
    if (on_change_) on_change_();
  }

  uv_loop_t* loop_;
  RouterHost& host_;
  RouterOptions options_;
  std::map<SessionId, Session> sessions_;
  std::map<std::string, SessionId> owner_;                  // sandbox id -> owning live session
  std::map<std::string, std::unique_ptr<Detached>> detached_;  // sandbox id -> what is kept
  std::map<std::string, std::set<std::string>> processes_;  // sandbox id -> live processes the editor knows
  std::map<std::string, std::string> process_sandbox_;      // the same, the other way (kept until the exit is routed)
  std::uint64_t next_generation_ = 1;
  std::function<void()> on_change_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::serve
