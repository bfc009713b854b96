// The editor face of sandboxes and processes: sandbox/* and process/* on a Connection.
//
// Reads params with protocol/sandbox.h, calls the SandboxManager, answers with the documented
// results (protocol/sandboxes.md), and turns core events into sandbox/stateChanged,
// sandbox/limitReached, process/output and process/exited notifications. Loop thread only.
#pragma once

#include "server/core/sandbox_events.h"
#include "server/core/process_watch.h"
#include "server/core/sandbox_manager.h"
#include "server/rpc/connection.h"

namespace lockroom::api {

class SandboxMethods final : public core::SandboxEvents {
 public:
  explicit SandboxMethods(rpc::Connection& connection) : connection_(connection) {}
  // Registers the methods; `manager` and `watch` (the process watch between the manager and
  // these events, for kits' setup processes) must outlive the connection's dispatching.
  void bind(core::SandboxManager& manager, core::ProcessWatch& watch);

  void state_changed(const std::string& id, core::SandboxState state, core::StopReason reason, const std::string& message) override;
  void process_output(const std::string& process_id, core::OutputStream stream, const core::OutputChunk& chunk) override;
  void process_exited(const std::string& process_id, const core::ProcessExit& exit) override;
  void limit_reached(const std::string& sandbox_id, const core::LimitEvent& event) override;
  void guest_misbehaved(const std::string& sandbox_id, const core::MisbehaviourEvent& event) override;
  void network_event(const std::string& sandbox_id, const egress::AuditRecord& record) override;
  void approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) override;

  // Whether the editor declared at initialize that it answers network/approve.
  void set_client_can_approve(std::function<bool()> fn) { client_can_approve_ = std::move(fn); }

 private:
  rpc::Connection& connection_;
  std::function<bool()> client_can_approve_;
};

}  // namespace lockroom::api
