// Approval outcomes (ApprovalOutcome in proxy.h): their names on the wire and the sentence the
// audit record carries. Pure.
#include "server/egress/engine/proxy.h"

namespace lockroom::egress {

namespace {

// Editor-supplied text in an audit reason: one line, bounded.
std::string clip(std::string_view text, std::size_t max = 120) {
  std::string out;
  for (char c : text.substr(0, max)) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (text.size() > max) out += "...";
  return out;
}

}  // namespace

ApprovalOutcome ApprovalOutcome::not_asked(NoAnswerReason why) {
  ApprovalOutcome outcome(ApprovalAnswer::kNotAsked);
  outcome.why = why;
  return outcome;
}

ApprovalOutcome ApprovalOutcome::no_answer(NoAnswerReason why, std::string detail) {
  ApprovalOutcome outcome(ApprovalAnswer::kNoAnswer);
  outcome.why = why;
  outcome.detail = std::move(detail);
  return outcome;
}

const char* approval_answer_name(ApprovalAnswer answer) {
  switch (answer) {
    case ApprovalAnswer::kAllowOnce: return "allow once";
    case ApprovalAnswer::kAllowSandbox: return "allow for this sandbox";
    case ApprovalAnswer::kDeny: return "deny";
    case ApprovalAnswer::kNotAsked: return "not asked";
    case ApprovalAnswer::kNoAnswer: return "no answer";
  }
  return "no answer";
}

const char* approval_answer_wire(ApprovalAnswer answer) {
  switch (answer) {
    case ApprovalAnswer::kAllowOnce: return "allowOnce";
    case ApprovalAnswer::kAllowSandbox: return "allowSandbox";
    case ApprovalAnswer::kDeny: return "deny";
    case ApprovalAnswer::kNotAsked: return "notAsked";
    case ApprovalAnswer::kNoAnswer: return "noAnswer";
  }
  return "noAnswer";
}

const char* no_answer_reason_wire(NoAnswerReason why) {
  switch (why) {
    case NoAnswerReason::kNone: return "";
    case NoAnswerReason::kNotDeclared: return "notDeclared";
    case NoAnswerReason::kSandboxGone: return "sandboxGone";
    case NoAnswerReason::kTimeout: return "timeout";
    case NoAnswerReason::kEditorError: return "editorError";
    case NoAnswerReason::kUnknownDecision: return "unknownDecision";
    case NoAnswerReason::kNoEditor: return "noEditor";
    case NoAnswerReason::kInvalidScope: return "invalidScope";
  }
  return "";
}

std::string approval_outcome_text(const ApprovalOutcome& outcome) {
  if (outcome.answer != ApprovalAnswer::kNotAsked && outcome.answer != ApprovalAnswer::kNoAnswer)
    return std::string("the user answered ") + approval_answer_name(outcome.answer);
  std::string text = approval_answer_name(outcome.answer);
  switch (outcome.why) {
    case NoAnswerReason::kNone: break;
    case NoAnswerReason::kNotDeclared: text += ": the editor did not declare network approvals at initialize"; break;
    case NoAnswerReason::kSandboxGone: text += ": the sandbox was going away"; break;
    case NoAnswerReason::kTimeout: text += ": the editor did not answer in time"; break;
    case NoAnswerReason::kEditorError: text += ": the editor answered with an error"; break;
    case NoAnswerReason::kUnknownDecision: text += ": the editor's decision is not allowOnce, allowSandbox, allowHost or deny"; break;
    case NoAnswerReason::kInvalidScope: text += ": the editor's grant is wider than allowed"; break;
    case NoAnswerReason::kNoEditor: text += ": no editor is attached to the sandbox (its connection ended; sandbox/attach it again)"; break;
  }
  if (!outcome.detail.empty()) text += " (" + clip(outcome.detail) + ")";
  return text + "; denied";
}

}  // namespace lockroom::egress
