// What the sandbox core tells the world: state changes and process events, in core types.
//
// The editor face (server/api) turns them into notifications; `lockroom run` into terminal
// output. Called on the loop thread, from inside core callbacks: implementations must not call
// back into the manager synchronously in a way that destroys the sandbox being reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/output_text.h"
#include "server/core/sandbox_state.h"
#include "server/egress/engine/proxy.h"
#include "server/egress/policy/audit.h"

namespace lockroom::core {

enum class OutputStream { kStdout, kStderr, kPty };
std::string_view stream_name(OutputStream stream);

// Why lockroom ended a process itself (empty when the process ended on its own).
enum class ProcessEndReason { kNone, kOutputLimit, kSandboxGone };
std::string_view end_reason_name(ProcessEndReason reason);

// A limit the sandbox met: the guest's disk filled, a fork or a start was refused for the process
// limit, the guest ran out of memory, a process passed its output limit, the lifetime ran out.
// Reported once per episode (the guest's own reports are checked and rate-limited by the host).
enum class LimitKind { kDisk, kProcesses, kOutput, kMemory, kLifetime };
std::string_view limit_name(LimitKind limit);

struct LimitEvent {
  LimitKind limit = LimitKind::kDisk;
  std::string message;
  std::optional<std::string> process_id;  // the process concerned, when there is one
  std::optional<std::int64_t> value;       // the limit in force (MiB, processes, bytes, seconds)
};

// The guest sent what lockroom refused: entries of its workspace manifest a review would not
// take (a path outside the workspace or in .git, a device, a file over the limit...). The review
// went on without them; this says that the guest misbehaved, once per review that found any.
struct MisbehaviourEvent {
  std::string source;   // what was refused: "workspace" (the manifest of a review)
  std::string message;  // for people: how many, and the first one with its reason
  std::size_t count = 0;
  struct Entry {
    std::string path;  // printable
    std::string reason;
  };
  std::vector<Entry> entries;  // the first kMaxEntries of them
  static constexpr std::size_t kMaxEntries = 20;
};

struct ProcessExit {
  std::optional<int> exit_code;
  std::optional<int> signal;
  ProcessEndReason reason = ProcessEndReason::kNone;
};

// Who started a process: the client (process/start), or lockroom on its behalf (a kit's service,
// a kit's file writer or setup command).
enum class ProcessOrigin { kClient, kKitService, kKitSetup };
std::string_view origin_name(ProcessOrigin origin);  // "client", "kitService", "kitSetup"

// A process as process/list and process/started describe it.
struct ProcessInfo {
  std::string process_id;
  std::string sandbox_id;
  std::vector<std::string> argv;
  std::string cwd;  // as started (the default filled in)
  bool pty = false;
  ProcessOrigin origin = ProcessOrigin::kClient;
  std::string name;  // a kit service's name, else empty
  std::int64_t started_unix_ms = 0;
  std::optional<ProcessExit> exit;  // set once it exited
};

// Why a running sandbox's network policy changed.
enum class PolicyChangeCause { kApproval, kRequest };
std::string_view policy_cause_name(PolicyChangeCause cause);  // "approval", "request"

class SandboxEvents {
 public:
  virtual ~SandboxEvents() = default;
  virtual void state_changed(const std::string& sandbox_id, SandboxState state, StopReason reason, const std::string& message) = 0;
  virtual void process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) = 0;
  // Raw bytes as they came, for consumers that want them (a terminal); default: nothing.
  virtual void process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) {}
  virtual void process_exited(const std::string& process_id, const ProcessExit& exit) = 0;
  // A limit was met (once per episode); default: nothing.
  virtual void limit_reached(const std::string& sandbox_id, const LimitEvent& event) {}
  // The guest misbehaved (MisbehaviourEvent); default: nothing.
  virtual void guest_misbehaved(const std::string& sandbox_id, const MisbehaviourEvent& event) {}
  // A process started that the events' consumer may not know of (every process: a consumer that
  // started it itself knows its id from the start's answer); default: nothing.
  virtual void process_started(const ProcessInfo& info) {}
  // The guest's workspace changed (debounced, version only grows); default: nothing.
  virtual void workspace_changed(const std::string& sandbox_id, std::uint64_t version) {}
  // The running network policy changed (an allowSandbox answer added a rule, or a request
  // replaced it); default: nothing.
  virtual void network_policy_changed(const std::string& sandbox_id, const egress::Policy& policy, PolicyChangeCause cause) {}
  // Each egress decision of a sandbox with networking (the audit record); default: nothing.
  virtual void network_event(const std::string& sandbox_id, const egress::AuditRecord& record) {}
  // A host no rule covers, when the policy says "ask": answer allow once / for the sandbox /
  // deny (exactly once, possibly later), or say why nobody answered. Default: not asked (denied).
  virtual void approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) {
    reply(egress::ApprovalOutcome::not_asked(egress::NoAnswerReason::kNotDeclared));
  }
};

}  // namespace lockroom::core
