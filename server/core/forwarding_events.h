// ForwardingEvents: SandboxEvents that pass every event on to `next` unchanged. The events that
// sit between the manager and the editor (ProcessWatch, ControlEndpoints) derive from it and
// override only the events they act on, so a new kind of event reaches the editor through all of
// them without each forwarding it by hand.
#pragma once

#include <string>
#include <string_view>

#include "server/core/sandbox_events.h"

namespace lockroom::core {

class ForwardingEvents : public SandboxEvents {
 public:
  explicit ForwardingEvents(SandboxEvents& next) : next_(next) {}

  void state_changed(const std::string& sandbox_id, SandboxState state, StopReason reason, const std::string& message) override {
    next_.state_changed(sandbox_id, state, reason, message);
  }
  void process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) override {
    next_.process_output(process_id, stream, chunk);
  }
  void process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) override {
    next_.process_bytes(process_id, stream, bytes);
  }
  void process_exited(const std::string& process_id, const ProcessExit& exit) override { next_.process_exited(process_id, exit); }
  void process_started(const ProcessInfo& info) override { next_.process_started(info); }
  void workspace_changed(const std::string& sandbox_id, std::uint64_t version) override { next_.workspace_changed(sandbox_id, version); }
  void network_policy_changed(const std::string& sandbox_id, const egress::Policy& policy, PolicyChangeCause cause) override {
    next_.network_policy_changed(sandbox_id, policy, cause);
  }
  void limit_reached(const std::string& sandbox_id, const LimitEvent& event) override { next_.limit_reached(sandbox_id, event); }
  void guest_misbehaved(const std::string& sandbox_id, const MisbehaviourEvent& event) override { next_.guest_misbehaved(sandbox_id, event); }
  void network_event(const std::string& sandbox_id, const egress::AuditRecord& record) override {
    next_.network_event(sandbox_id, record);
  }
  void approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) override {
    next_.approve_network(sandbox_id, question, std::move(reply));
  }

 protected:
  SandboxEvents& next() { return next_; }

 private:
  SandboxEvents& next_;
};

}  // namespace lockroom::core
