// The editor's answer to network/approve as the proxy gets it (api::approval_from_editor): the
// four decisions, allowHost as a grant of the host on any port, a scope read strictly (and only
// with allowSandbox), and every malformed answer as "no answer" with why.
#include <catch2/catch.hpp>

#include "server/api/network_methods.h"

using namespace lockroom;
using protocol::json;

namespace {

egress::ApprovalOutcome answer(const char* result) { return api::approval_from_editor(rpc::CallOutcome{json::parse(result), std::nullopt}); }

}  // namespace

TEST_CASE("network/approve answers: decisions, allowHost, scopes") {
  CHECK(answer(R"({"decision":"allowOnce"})").answer == egress::ApprovalAnswer::kAllowOnce);
  CHECK(answer(R"({"decision":"deny"})").answer == egress::ApprovalAnswer::kDeny);
  auto sandbox = answer(R"({"decision":"allowSandbox"})");
  CHECK(sandbox.answer == egress::ApprovalAnswer::kAllowSandbox);
  CHECK_FALSE(sandbox.scope);

  auto host = answer(R"({"decision":"allowHost"})");
  CHECK(host.answer == egress::ApprovalAnswer::kAllowSandbox);
  REQUIRE(host.scope);
  CHECK(host.scope->host.empty());
  CHECK(host.scope->any_port);

  auto wildcard = answer(R"({"decision":"allowSandbox","scope":{"host":"*.example.com","ports":"any"}})");
  CHECK(wildcard.answer == egress::ApprovalAnswer::kAllowSandbox);
  REQUIRE(wildcard.scope);
  CHECK(wildcard.scope->host == "*.example.com");

  auto malformed = answer(R"({"decision":"allowSandbox","scope":{"host":"*.example.com","port":443}})");
  CHECK(malformed.answer == egress::ApprovalAnswer::kNoAnswer);
  CHECK(malformed.why == egress::NoAnswerReason::kInvalidScope);
  CHECK(malformed.detail.find("scope.port") != std::string::npos);

  auto scoped_deny = answer(R"({"decision":"allowOnce","scope":{"ports":"any"}})");
  CHECK(scoped_deny.why == egress::NoAnswerReason::kInvalidScope);
  CHECK_FALSE(scoped_deny.allows());

  auto unknown = answer(R"({"decision":"allowForever"})");
  CHECK(unknown.why == egress::NoAnswerReason::kUnknownDecision);
  CHECK(egress::approval_outcome_text(unknown) ==
        "no answer: the editor's decision is not allowOnce, allowSandbox, allowHost or deny (decision \"allowForever\"); denied");
  CHECK(std::string(egress::no_answer_reason_wire(egress::NoAnswerReason::kInvalidScope)) == "invalidScope");
}
