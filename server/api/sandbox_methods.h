// The editor face of sandboxes and processes: sandbox/* and process/* on a Connection.
//
// Reads params with protocol/sandbox.h, calls the SandboxManager, answers with the documented
// results (protocol/sandboxes.md), and turns core events into sandbox/stateChanged,
// sandbox/limitReached, process/output, process/exited, process/started (processes the editor did
// not start: kit services), changes/changed and network/policyChanged notifications. Loop
// thread only.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "server/core/sandbox_events.h"
#include "server/core/process_watch.h"
#include "server/core/sandbox_manager.h"
#include "server/rpc/connection.h"

namespace lockroom::api {

// A shared server's say in which sandboxes a connection sees (server/serve/session.h); unset,
// the connection owns every sandbox of the manager (`serve --standalone`, `lockroom run`).
struct SandboxOwnership {
  // A create succeeded: the sandbox becomes the connection's. False when the connection is gone
  // (the sandbox is then destroyed: nobody got its id).
  std::function<bool(const std::string& sandbox_id)> claim;
  std::function<bool()> connected;  // whether the connection is still there (with claim)
  // A process the editor was told of (process/start's answer, a kit's service).
  std::function<void(const std::string& sandbox_id, const std::string& process_id)> started;
  // sandbox/list: adds what the connection should know to `entry` ("attached"), or false to
  // leave the sandbox out.
  std::function<bool(const std::string& sandbox_id, protocol::json& entry)> listed;
  // The editor's environment, where secrets `from: {env}` are read (null: this process's).
  std::shared_ptr<const std::map<std::string, std::string>> client_env;
};

// One sandbox/list entry (also sandbox/attach's `sandbox`).
protocol::json sandbox_entry_json(const core::SandboxManager& manager, const core::SandboxSummary& summary);

class SandboxMethods final : public core::SandboxEvents {
 public:
  static constexpr std::size_t kOutputHighMark = 1u << 20;
  static constexpr std::size_t kOutputLowMark = 256u << 10;
  explicit SandboxMethods(rpc::Connection& connection) : connection_(connection) {}
  // Registers the methods; `manager` and `watch` (the process watch between the manager and
  // these events, for kits' setup processes) must outlive the connection's dispatching.
  void bind(core::SandboxManager& manager, core::ProcessWatch& watch);

  void state_changed(const std::string& id, core::SandboxState state, core::StopReason reason, const std::string& message) override;
  void process_output(const std::string& process_id, core::OutputStream stream, const core::OutputChunk& chunk) override;
  void process_exited(const std::string& process_id, const core::ProcessExit& exit) override;
  void process_started(const core::ProcessInfo& info) override;
  void workspace_changed(const std::string& sandbox_id, std::uint64_t version) override;
  void network_policy_changed(const std::string& sandbox_id, const egress::Policy& policy, core::PolicyChangeCause cause) override;
  void limit_reached(const std::string& sandbox_id, const core::LimitEvent& event) override;
  void guest_misbehaved(const std::string& sandbox_id, const core::MisbehaviourEvent& event) override;
  void network_event(const std::string& sandbox_id, const egress::AuditRecord& record) override;
  void approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) override;

  // Whether the editor declared at initialize that it answers network/approve.
  void set_client_can_approve(std::function<bool()> fn) { client_can_approve_ = std::move(fn); }
  // Before bind(): the shared server's ownership hooks (see SandboxOwnership).
  void set_ownership(SandboxOwnership ownership) { ownership_ = std::make_shared<SandboxOwnership>(std::move(ownership)); }

 private:
  // sandboxId for process/* notifications.
  void add_sandbox_id(protocol::json& params, const std::string& process_id) const;

  // Flow control: a process whose output finds more than kOutputHighMark bytes queued for the
  // editor is paused (its output stays in the guest, held by the channel's credit) until the
  // queue is down to kOutputLowMark.
  void flow_control(const std::string& process_id);
  void resume_paused();

  rpc::Connection& connection_;
  core::SandboxManager* manager_ = nullptr;
  std::set<std::string> paused_;
  std::function<bool()> client_can_approve_;
  std::shared_ptr<SandboxOwnership> ownership_;
};

}  // namespace lockroom::api
