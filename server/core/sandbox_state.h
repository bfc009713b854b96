// A sandbox's lifecycle, and which operations each state allows — decided in this one place.
//
//   creating ──▶ ready ──▶ stopping ──▶ gone
//       │          │
//       └──────────┴──▶ failed (QEMU died, the agent stopped answering, a limit ended it)
// Pure, in the manner of Firecracker's rpc_interface: operations ask check_allowed() before
// they act, and a refusal is an error whose text tells the user what to do.
#pragma once

#include <string>
#include <string_view>

#include "server/common/result.h"

namespace lockroom::core {

enum class SandboxState { kCreating, kReady, kStopping, kGone, kFailed };

enum class SandboxOp {
  kStartProcess,   // process/start
  kProcessIo,      // write, closeStdin, resize, signal
  kReadFiles,      // changes/*, file reads
  kSync,           // workspace/sync
  kDestroy,        // sandbox/destroy
};

// Why a sandbox left `ready` (reported with sandbox/stateChanged).
enum class StopReason {
  kNone,
  kDestroyed,        // the client asked
  kLifetimeLimit,    // resources.timeoutSeconds ran out
  kMemoryLimit,      // the guest ran out of memory
  kGuestCrashed,     // QEMU exited or was killed
  kAgentUnresponsive,  // the watchdog gave up on the agent
  kChannelError,     // the guest sent something malformed
  kServerShutdown,   // the editor went away
  kKilled,           // `lockroom kill` from another process
  kDetachedTimeout,  // no editor re-attached it within the detached grace (shared server)
};

std::string_view state_name(SandboxState state);
std::string_view reason_name(StopReason reason);
std::string_view op_name(SandboxOp op);

// `detail` names the reason a failed sandbox failed, for the message.
Result<void> check_allowed(SandboxOp op, SandboxState state, std::string_view sandbox_id, std::string_view detail = "");

// True for the states a sandbox never leaves.
inline bool is_final(SandboxState s) { return s == SandboxState::kGone || s == SandboxState::kFailed; }

}  // namespace lockroom::core
