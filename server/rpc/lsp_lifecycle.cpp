// LspLifecycle; see lsp_lifecycle.h.
#include "server/rpc/lsp_lifecycle.h"

namespace lockroom::rpc {

namespace rpc_error = protocol::rpc_error;

GateDecision LspLifecycle::gate(std::string_view method, bool is_request) const {
  if (!is_request) {
    if (method == "exit" || state_ == State::kRunning) return GateDecision::pass();
    return GateDecision::refuse(0, "");  // dropped
  }
  switch (state_) {
    case State::kUninitialized:
      if (method == "initialize") return GateDecision::pass();
      return GateDecision::refuse(rpc_error::kServerNotInitialized,
                                  "server not initialized: send \"initialize\" before \"" + std::string(method) + "\"");
    case State::kRunning:
      if (method == "initialize")
        return GateDecision::refuse(rpc_error::kInvalidRequest, "invalid request: \"initialize\" may be sent only once");
      return GateDecision::pass();
    case State::kShutDown:
      return GateDecision::refuse(rpc_error::kInvalidRequest,
                                  "invalid request: the server is shutting down; only the \"exit\" notification is accepted");
  }
  return GateDecision::pass();
}

}  // namespace lockroom::rpc
