// The editor face of egress: sandbox/create's `network` and `secrets` params, network/policy,
// the network/event notification and the network/approve request to the editor
// (protocol/network.md). Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "server/core/sandbox_manager.h"
#include "server/rpc/connection.h"

namespace lockroom::api {

// `network` (absent: the default policy; false: no network at all; an object: a policy) and
// `secrets` of sandbox/create, as the core's request, before kits are applied and the default
// allow list is added (core::finish_network). Fails with -32602 naming the field.
Result<std::optional<core::NetworkRequest>> read_network_request(const protocol::json& params);

// network/policy's answer: {sandboxId, policy (false while switched off), auditLog}.
protocol::json network_policy_answer(const std::string& sandbox_id, const core::SandboxNetwork& network);

// Registers network/policy; `manager` must outlive the connection's dispatching.
void bind_network_methods(rpc::Connection& connection, core::SandboxManager& manager);

// network/policyChanged: the running policy (as network/policy returns it) and why it changed.
void send_policy_changed(rpc::Connection& connection, const std::string& sandbox_id, const egress::Policy& policy, const std::string& cause);

// network/event for one audit record.
void send_network_event(rpc::Connection& connection, const std::string& sandbox_id, const egress::AuditRecord& record);

// What the editor's reply to network/approve means: its decision (allowHost is allowSandbox for
// the asked host on any port; allowSandbox may carry a `scope`, checked later against the asked
// host by the proxy), or no answer with why (the call timed out, the editor answered with an
// error, with a decision that is none of the four, or with a malformed scope). Pure.
egress::ApprovalOutcome approval_from_editor(const rpc::CallOutcome& outcome);

// network/approve to the editor when it said it answers them (else: not asked), with a timeout
// (sent as timeoutMs and as the deadline), the approvalId and key of the question, the guest
// process when known and the grant scopes the editor may offer.
void ask_editor_to_approve(rpc::Connection& connection, bool client_can_approve, const std::string& sandbox_id,
                           const egress::ApprovalQuestion& question, egress::ApprovalReply reply,
                           std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace lockroom::api
