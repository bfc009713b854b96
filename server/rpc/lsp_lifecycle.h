// LspLifecycle: the editor face's lifecycle as a pure state machine.
//
//   uninitialized --initialize--> running --shutdown--> shut down --exit--> (exit 0)
//   any state --exit--> (exit 1 unless shut down)
// Before initialize, requests other than `initialize` get -32002 and notifications other than
// `exit` are dropped. A second `initialize` gets -32600. After shutdown, requests get -32600 and
// notifications other than `exit` are dropped. The Connection installs gate() on its dispatcher.
#pragma once

#include <string_view>

#include "server/rpc/dispatcher.h"

namespace lockroom::rpc {

class LspLifecycle {
 public:
  enum class State { kUninitialized, kRunning, kShutDown };

  GateDecision gate(std::string_view method, bool is_request) const;
  void initialized() { state_ = State::kRunning; }
  void shut_down() { state_ = State::kShutDown; }
  State state() const { return state_; }
  // The process exit code LSP prescribes for `exit` (or for the editor going away).
  int exit_code() const { return state_ == State::kShutDown ? 0 : 1; }

 private:
  State state_ = State::kUninitialized;
};

}  // namespace lockroom::rpc
