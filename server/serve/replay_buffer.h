// ReplayBuffer: what happened in one sandbox while no editor was attached to it, kept within
// bounds, so that the editor that attaches it next (sandbox/attach) gets it in order.
//
// The SessionRouter (session_router.h) keeps one per detached sandbox. Events are kept in the
// order they came. Process output is bounded: at most `per_process_bytes` of the newest output
// of each process, and at most `per_sandbox_bytes` of output in all (the oldest output goes
// first; what goes is counted per process, in bytes). network/event records are bounded to the
// newest `max_network_events` (the rest counted). Exits, state changes, limits and misbehaviour
// reports are never dropped: there is at most a handful of them per process or sandbox.
// Pure; loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <variant>

#include "server/core/sandbox_events.h"

namespace lockroom::serve {

struct ReplayLimits {
  std::size_t per_process_bytes = 64u << 10;
  std::size_t per_sandbox_bytes = 1u << 20;
  std::size_t max_network_events = 64;
};

// One event kept for replay, exactly as it would have gone to the editor.
struct ReplayEvent {
  struct Output {
    std::string process_id;
    core::OutputStream stream;
    core::OutputChunk chunk;
  };
  struct Exited {
    std::string process_id;
    core::ProcessExit exit;
  };
  struct State {
    core::SandboxState state;
    core::StopReason reason;
    std::string message;
  };
  struct Network {
    egress::AuditRecord record;
  };
  std::variant<Output, Exited, State, core::LimitEvent, core::MisbehaviourEvent, Network> what;
};

// What was lost, for the attach answer.
struct ReplayStats {
  std::uint64_t kept_output_bytes = 0;
  std::uint64_t dropped_output_bytes = 0;
  std::map<std::string, std::uint64_t> dropped_by_process;  // only processes that lost output
  std::uint64_t dropped_network_events = 0;
};

class ReplayBuffer {
 public:
  explicit ReplayBuffer(ReplayLimits limits = {}) : limits_(limits) {}

  void output(const std::string& process_id, core::OutputStream stream, const core::OutputChunk& chunk);
  void exited(const std::string& process_id, const core::ProcessExit& exit);
  void state(core::SandboxState state, core::StopReason reason, const std::string& message);
  void limit(const core::LimitEvent& event);
  void misbehaved(const core::MisbehaviourEvent& event);
  void network(const egress::AuditRecord& record);

  std::size_t events() const { return events_.size(); }
  std::uint64_t kept_output_bytes() const { return kept_bytes_; }
  ReplayStats stats() const;
  // Everything kept, oldest first; the buffer is empty after.
  std::list<ReplayEvent> take();

 private:
  using Iter = std::list<ReplayEvent>::iterator;
  void drop_oldest_output_of(const std::string& process_id);
  void drop_oldest_output();
  void forget(Iter it);

  ReplayLimits limits_;
  std::list<ReplayEvent> events_;
  std::deque<Iter> output_order_;                       // every kept output event, oldest first
  std::map<std::string, std::deque<Iter>> by_process_;  // each process's kept output, oldest first
  std::map<std::string, std::size_t> process_bytes_;
  std::deque<Iter> network_order_;
  std::uint64_t kept_bytes_ = 0;
  std::map<std::string, std::uint64_t> dropped_;
  std::uint64_t dropped_network_ = 0;
};

}  // namespace lockroom::serve
