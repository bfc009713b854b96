// The agent's method table; see rpc_server.h.
#include "guest/rpc_server.h"

#include "guest/log.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace rpc_error = protocol::rpc_error;

void RpcServer::handle(std::string_view text) {
  protocol::Message message = protocol::classify(text);
  if (auto* invalid = std::get_if<protocol::InvalidMessage>(&message)) {
    log_warn("bad control message from the host: " + invalid->error.message);
    return send_(protocol::encode_error(invalid->id, invalid->error));
  }
  if (auto* note = std::get_if<protocol::Notification>(&message)) {
    if (note->method != "$/cancelRequest") log_debug("ignored notification " + note->method);
    return;
  }
  if (auto* response = std::get_if<protocol::Response>(&message)) {
    log_warn("ignored a reply to id " + protocol::id_to_string(response->id) + ": the agent sends no requests");
    return;
  }
  auto& request = std::get<protocol::Request>(message);
  Outcome outcome;
  if (!ready_ && request.method != protocol::channel::method::kHello) {
    outcome = make_rpc_error(protocol::channel::agent_error::kNotReady,
                             request.method + " before hello: the host must send hello first on every connection");
  } else if (auto it = handlers_.find(request.method); it == handlers_.end()) {
    outcome = make_rpc_error(rpc_error::kMethodNotFound, "unknown method \"" + request.method + "\"");
  } else {
    try {
      outcome = it->second(request.params);
    } catch (const std::exception& e) {
      log_error("handler for " + request.method + " threw: " + e.what());
      outcome = make_rpc_error(rpc_error::kInternalError, "internal error in " + request.method + ": " + e.what());
    }
  }
  if (auto* result = std::get_if<json>(&outcome)) {
    send_(protocol::encode_result(request.id, *result));
  } else {
    send_(protocol::encode_error(request.id, std::get<RpcError>(outcome)));
  }
}

}  // namespace lockroom::agent
