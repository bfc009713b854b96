// Approvals that are not the user's answer, against a real HTTP server on loopback: nobody was
// asked (no hook, the client did not declare approvals, the sandbox is going away) or the editor
// gave no usable answer (timeout, error, unknown decision). Each denies, and its audit record
// says which it was (`approval`, `approvalReason`, the reason's sentence) under the policy's own
// rule, never "user"; the guest's 403 says the same in its body and headers. A CONNECT gets the
// same record. Also the outcomes' wire names and sentences.
#include <catch2/catch.hpp>

#include "server/egress/policy/audit.h"
#include "tests/unit/egress_engine/engine_test_support.h"

using namespace lockroom::egress;
using namespace lockroom::testing;

namespace {

constexpr const char* kAskPolicy = R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"unmatched":"ask","defaultAllow":false})";

std::string get_localhost(std::uint16_t port) {
  return "GET http://localhost:" + std::to_string(port) + "/asked HTTP/1.1\r\nHost: localhost\r\n\r\n";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("approval outcomes: wire names and the audit sentence", "[proxy][approval]") {
  CHECK(std::string(approval_answer_wire(ApprovalAnswer::kAllowOnce)) == "allowOnce");
  CHECK(std::string(approval_answer_wire(ApprovalAnswer::kNotAsked)) == "notAsked");
  CHECK(std::string(approval_answer_wire(ApprovalAnswer::kNoAnswer)) == "noAnswer");
  CHECK(std::string(no_answer_reason_wire(NoAnswerReason::kNone)).empty());
  CHECK(std::string(no_answer_reason_wire(NoAnswerReason::kUnknownDecision)) == "unknownDecision");
  CHECK(approval_outcome_text(ApprovalAnswer::kDeny) == "the user answered deny");
  CHECK(approval_outcome_text(ApprovalAnswer::kAllowSandbox) == "the user answered allow for this sandbox");
  CHECK(approval_outcome_text(ApprovalOutcome::not_asked(NoAnswerReason::kSandboxGone)) ==
        "not asked: the sandbox was going away; denied");
  // What the editor said is kept, on one line and bounded.
  std::string said = approval_outcome_text(ApprovalOutcome::no_answer(NoAnswerReason::kEditorError, "-32603 boom\nsecond line" + std::string(500, 'x')));
  CHECK(said.rfind("no answer: the editor answered with an error (-32603 boom second line", 0) == 0);
  CHECK_FALSE(has(said, "\n"));
  CHECK(said.size() < 250);
  CHECK_FALSE(ApprovalOutcome::no_answer(NoAnswerReason::kTimeout).allows());
  CHECK(ApprovalOutcome(ApprovalAnswer::kAllowOnce).allows());
}

TEST_CASE("approvals that are not answers deny under the policy's rule and say why", "[proxy][approval]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  std::optional<ApprovalOutcome> next;
  int asked = 0;
  ProxyOptions options;
  options.policy = policy_from(kAskPolicy);
  options.approve = [&](const ApprovalQuestion&, ApprovalReply reply) {
    ++asked;
    reply(*next);
  };
  ProxyHarness harness(std::move(options));
  auto ask = [&](ApprovalOutcome outcome) {
    next = outcome;
    HttpAnswer result;
    harness.run_http([&](int fd) {
      send_all(fd, get_localhost(server->port()));
      result = read_answer(socket_reader(fd));
    });
    return result;
  };

  struct Case {
    ApprovalOutcome outcome;
    std::string approval, why, sentence;
  };
  std::vector<Case> cases = {
      {ApprovalOutcome::not_asked(NoAnswerReason::kNotDeclared), "notAsked", "notDeclared",
       "not asked: the editor did not declare network approvals at initialize; denied"},
      {ApprovalOutcome::not_asked(NoAnswerReason::kSandboxGone), "notAsked", "sandboxGone", "not asked: the sandbox was going away; denied"},
      {ApprovalOutcome::no_answer(NoAnswerReason::kTimeout, "no reply within 60000 ms"), "noAnswer", "timeout",
       "no answer: the editor did not answer in time (no reply within 60000 ms); denied"},
      {ApprovalOutcome::no_answer(NoAnswerReason::kEditorError, "-32603 the dialog crashed"), "noAnswer", "editorError",
       "no answer: the editor answered with an error (-32603 the dialog crashed); denied"},
      {ApprovalOutcome::no_answer(NoAnswerReason::kUnknownDecision, "decision \"maybe\""), "noAnswer", "unknownDecision",
       "no answer: the editor's decision is not allowOnce, allowSandbox, allowHost or deny (decision \"maybe\"); denied"},
  };
  for (const Case& c : cases) {
    INFO(c.approval << " " << c.why);
    std::size_t before = harness.events.size();
    HttpAnswer answer = ask(c.outcome);
    CHECK(answer.status == 403);
    REQUIRE(harness.events.size() == before + 1);
    const AuditRecord& record = harness.events.back();
    CHECK(record.decision == "deny");
    CHECK(record.rule == "default");  // the user decided nothing
    CHECK(record.approval == c.approval);
    CHECK(record.approval_reason == c.why);
    const std::string expected_reason = "no rule covers http localhost:" + std::to_string(server->port()) + "; asking; " + c.sentence;
    CHECK(record.reason == expected_reason);
    // The guest reads the same in the body and the headers.
    CHECK(has(answer.body, "(rule: default): " + expected_reason));
    CHECK(has(answer.head, "X-Lockroom-Rule: default\r\n"));
    CHECK(has(answer.head, "Proxy-Status: lockroom; error=http_request_denied; details=\"rule default: "));
    // And the audit line carries it back.
    auto parsed = parse_audit_line(audit_record_to_line(record));
    REQUIRE(parsed.ok());
    CHECK(parsed->approval == c.approval);
    CHECK(parsed->approval_reason == c.why);
  }
  CHECK(asked == static_cast<int>(cases.size()));
  CHECK(server->connections() == 0);

  // The user's own deny is "user", with no reason for a missing answer.
  HttpAnswer denied = ask(ApprovalAnswer::kDeny);
  CHECK(denied.status == 403);
  CHECK(harness.events.back().rule == "user");
  CHECK(harness.events.back().approval == "deny");
  CHECK(harness.events.back().approval_reason.empty());
  CHECK(harness.events.back().reason == "the user answered deny");
  // A user's allow is audited as such on the allowed request.
  CHECK(ask(ApprovalAnswer::kAllowOnce).status == 200);
  CHECK(harness.events.back().decision == "allow");
  CHECK(harness.events.back().approval == "allowOnce");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("a CONNECT nobody answered for is refused with the reason in its 403", "[proxy][approval][tunnel]") {
  ProxyOptions options;
  options.policy = policy_from(kAskPolicy);
  options.approve = [](const ApprovalQuestion&, ApprovalReply reply) {
    reply(ApprovalOutcome::no_answer(NoAnswerReason::kTimeout, "no reply within 1500 ms"));
  };
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    answer = read_answer(socket_reader(fd), "CONNECT");
  });
  CHECK(answer.status == 403);
  CHECK(has(answer.head, "X-Lockroom-Reason: no rule covers "));
  CHECK(has(answer.head, "no answer: the editor did not answer in time (no reply within 1500 ms); denied\r\n"));
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].method == "CONNECT");
  CHECK(harness.events[0].rule == "default");
  CHECK(harness.events[0].approval == "noAnswer");
  CHECK(harness.events[0].approval_reason == "timeout");
  CHECK(harness.close_all() == 0);
}
