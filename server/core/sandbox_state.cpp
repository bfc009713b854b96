// Sandbox lifecycle rules; see sandbox_state.h.
#include "server/core/sandbox_state.h"

namespace lockroom::core {

std::string_view state_name(SandboxState state) {
  switch (state) {
    case SandboxState::kCreating: return "creating";
    case SandboxState::kReady: return "ready";
    case SandboxState::kStopping: return "stopping";
    case SandboxState::kGone: return "gone";
    case SandboxState::kFailed: return "failed";
  }
  return "unknown";
}

std::string_view reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kNone: return "none";
    case StopReason::kDestroyed: return "destroyed";
    case StopReason::kLifetimeLimit: return "lifetimeLimit";
    case StopReason::kMemoryLimit: return "memoryLimit";
    case StopReason::kGuestCrashed: return "guestCrashed";
    case StopReason::kAgentUnresponsive: return "agentUnresponsive";
    case StopReason::kChannelError: return "channelError";
    case StopReason::kServerShutdown: return "serverShutdown";
    case StopReason::kKilled: return "killed";
    case StopReason::kDetachedTimeout: return "detachedTimeout";
  }
  return "unknown";
}

std::string_view op_name(SandboxOp op) {
  switch (op) {
    case SandboxOp::kStartProcess: return "start processes";
    case SandboxOp::kProcessIo: return "talk to processes";
    case SandboxOp::kReadFiles: return "read files";
    case SandboxOp::kSync: return "sync the workspace";
    case SandboxOp::kDestroy: return "be destroyed";
  }
  return "do that";
}

Result<void> check_allowed(SandboxOp op, SandboxState state, std::string_view id, std::string_view detail) {
  auto refuse = [&](const std::string& advice) -> Result<void> {
    std::string message = "sandbox " + std::string(id) + " is " + std::string(state_name(state));
    if (!detail.empty()) message += " (" + std::string(detail) + ")";
    message += " and cannot " + std::string(op_name(op)) + "; " + advice;
    return make_error(ErrorCode::kWrongState, message);
  };
  switch (state) {
    case SandboxState::kReady:
      return {};
    case SandboxState::kCreating:
      if (op == SandboxOp::kDestroy) return {};  // cancels the creation
      return refuse("wait for sandbox/create to answer");
    case SandboxState::kStopping:
      if (op == SandboxOp::kDestroy) return {};  // idempotent
      return refuse("it is being destroyed");
    case SandboxState::kFailed:
      // Its changes can still be reviewed: the host keeps what it had fetched.
      if (op == SandboxOp::kDestroy || op == SandboxOp::kReadFiles) return {};
      return refuse("destroy it and create a new sandbox");
    case SandboxState::kGone:
      return refuse("create a new sandbox");
  }
  return refuse("create a new sandbox");
}

}  // namespace lockroom::core
