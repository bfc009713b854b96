// network/* on the editor face; see network_methods.h.
#include "server/api/network_methods.h"

#include "protocol/params.h"
#include "server/api/error_map.h"
#include "server/egress/policy/grant.h"
#include "server/egress/policy/policy_json.h"

namespace lockroom::api {

using protocol::json;
using rpc::Reply;

namespace {

// Policies and secrets are the request's own fields: their errors keep the path they name.
Error invalid(const Error& e) { return make_field_error(e.field, e.message); }

Result<egress::Policy> policy_with_defaults(const json& value, const std::string& path) {
  auto policy = egress::parse_policy(value, path);
  if (!policy) return invalid(policy.error());
  return egress::with_default_allow(std::move(*policy), core::SandboxNetwork::default_allow());
}

}  // namespace

Result<std::optional<core::NetworkRequest>> read_network_request(const json& params) {
  const json* network = params.is_object() && params.contains("network") ? &params.at("network") : nullptr;
  if (network && network->is_boolean() && !network->get<bool>()) return std::optional<core::NetworkRequest>{};
  core::NetworkRequest request;
  auto policy = egress::parse_policy(network && !network->is_boolean() ? *network : json::object(), "network");
  if (!policy) return invalid(policy.error());
  request.policy = std::move(*policy);
  if (params.is_object() && params.contains("secrets")) {
    auto secrets = egress::parse_secrets(params.at("secrets"), "secrets");
    if (!secrets) return invalid(secrets.error());
    request.secrets = std::move(*secrets);
  }
  return std::optional<core::NetworkRequest>(std::move(request));
}

json network_policy_answer(const std::string& sandbox_id, const core::SandboxNetwork& network) {
  json policy = network.switched_off() ? json(false) : egress::policy_to_json(network.policy());
  return json{{"sandboxId", sandbox_id}, {"policy", std::move(policy)}, {"auditLog", network.audit_log().string()}};
}

void bind_network_methods(rpc::Connection& connection, core::SandboxManager& manager) {
  core::SandboxManager* m = &manager;
  connection.dispatcher().on_request("network/policy", [m](json params, Reply reply) {
    protocol::ParamReader reader(params);
    std::string id = reader.string("sandboxId", true).value_or("");
    auto change = reader.any("policy", false);
    reader.reject_unknown();
    if (!reader.ok()) return reply.error(reader.error());
    auto network = m->network(id);
    if (!network) return reply.error(to_rpc_error(network.error()));
    if (change && change->is_boolean() && !change->get<bool>()) {
      (*network)->switch_off();  // new connections refused, open ones closed
    } else if (change) {
      auto policy = policy_with_defaults(*change, "policy");
      if (!policy) return reply.error(to_rpc_error(policy.error()));
      (*network)->set_policy(std::move(*policy));  // also switches the network on again
    }
    reply.result(network_policy_answer(id, **network));
  });
}

void send_policy_changed(rpc::Connection& connection, const std::string& sandbox_id, const egress::Policy& policy, const std::string& cause) {
  connection.notify("network/policyChanged", json{{"sandboxId", sandbox_id}, {"policy", egress::policy_to_json(policy)}, {"cause", cause}});
}

void send_network_event(rpc::Connection& connection, const std::string& sandbox_id, const egress::AuditRecord& record) {
  json params = egress::audit_record_to_json(record);
  params["sandboxId"] = sandbox_id;
  connection.notify("network/event", params);
}

egress::ApprovalOutcome approval_from_editor(const rpc::CallOutcome& outcome) {
  using egress::ApprovalOutcome;
  using egress::NoAnswerReason;
  if (outcome.error) {
    // The dispatcher ends an unanswered call with RequestCancelled (and tells the editor so).
    if (outcome.error->code == protocol::rpc_error::kRequestCancelled)
      return ApprovalOutcome::no_answer(NoAnswerReason::kTimeout, outcome.error->message);
    return ApprovalOutcome::no_answer(NoAnswerReason::kEditorError,
                                      std::to_string(outcome.error->code) + " " + outcome.error->message);
  }
  const json* decision = outcome.result.is_object() && outcome.result.contains("decision") ? &outcome.result.at("decision") : nullptr;
  const json* scope = outcome.result.is_object() && outcome.result.contains("scope") ? &outcome.result.at("scope") : nullptr;
  if (decision && decision->is_string()) {
    const std::string& text = decision->get_ref<const std::string&>();
    if (scope && text != "allowSandbox")
      return ApprovalOutcome::no_answer(NoAnswerReason::kInvalidScope, "a scope goes only with decision allowSandbox, not " + text);
    if (text == "allowOnce") return egress::ApprovalAnswer::kAllowOnce;
    if (text == "deny") return egress::ApprovalAnswer::kDeny;
    if (text == "allowHost" || text == "allowSandbox") {
      ApprovalOutcome allowed(egress::ApprovalAnswer::kAllowSandbox);
      if (text == "allowHost") allowed.scope = egress::GrantScope{"", true, {}};  // the asked host, any port
      if (scope) {
        auto parsed = egress::parse_grant_scope(*scope, "scope");
        if (!parsed) return ApprovalOutcome::no_answer(NoAnswerReason::kInvalidScope, parsed.error().message);
        allowed.scope = std::move(*parsed);  // checked against the asked host by the proxy (grant_rule)
      }
      return allowed;
    }
  }
  // Anything else (no decision, a number, a misspelling) is no answer, and says what came.
  std::string got = decision ? "decision " + decision->dump(-1, ' ', false, json::error_handler_t::replace)
                             : "result " + outcome.result.dump(-1, ' ', false, json::error_handler_t::replace);
  return ApprovalOutcome::no_answer(NoAnswerReason::kUnknownDecision, got);
}

void ask_editor_to_approve(rpc::Connection& connection, bool client_can_approve, const std::string& sandbox_id,
                           const egress::ApprovalQuestion& q, egress::ApprovalReply reply, std::chrono::milliseconds timeout) {
  if (!client_can_approve) return reply(egress::ApprovalOutcome::not_asked(egress::NoAnswerReason::kNotDeclared));
  auto deadline = std::chrono::system_clock::now() + timeout;
  json params{{"sandboxId", sandbox_id}, {"host", q.host}, {"port", q.port}, {"scheme", q.scheme}, {"reason", q.reason},
              {"options", json::array({"allowOnce", "allowSandbox", "allowHost", "deny"})},
              {"timeoutMs", timeout.count()}, {"deadline", egress::format_rfc3339_ms(deadline)}};
  if (!q.approval_id.empty()) params["approvalId"] = q.approval_id;
  if (!q.key.empty()) params["key"] = q.key;
  if (!q.method.empty()) params["method"] = q.method;
  if (!q.path.empty()) params["path"] = q.path;
  if (q.process) {
    json process{{"pid", q.process->pid}, {"command", q.process->command}};
    if (!q.process->process_id.empty()) process["processId"] = q.process->process_id;
    params["process"] = std::move(process);
  }
  if (!q.target.host.name.empty()) {
    json scopes = json::array();
    for (const egress::GrantScope& scope : egress::suggested_scopes(q.target)) scopes.push_back(egress::grant_scope_to_json(scope, q.target));
    params["scopes"] = std::move(scopes);
  }
  connection.dispatcher().call("network/approve", params, timeout,
                               [reply](rpc::CallOutcome outcome) { reply(approval_from_editor(outcome)); });
}

}  // namespace lockroom::api
