// to_rpc_error; see error_map.h.
#include "server/api/error_map.h"

#include "protocol/params.h"

namespace lockroom::api {

namespace rpc_error = protocol::rpc_error;
namespace kind = protocol::failure_kind;

namespace {

// The problem part of a core message about `field`: the message without the field's name when
// it starts with it ("network.rules[0].host: ..." or "resources.cpus = 0 is ..."), else all of it.
std::string problem_of(const std::string& message, const std::string& field) {
  if (message.compare(0, field.size(), field) != 0) return message;
  std::string rest = message.substr(field.size());
  if (rest.rfind(": ", 0) == 0) return rest.substr(2);
  if (rest.rfind(' ', 0) == 0) return rest.substr(1);
  return message;
}

protocol::RpcError invalid_input(const Error& error) {
  if (error.message.rfind("invalid params: ", 0) == 0)
    return {rpc_error::kInvalidParams, error.message, protocol::json{{"field", error.field}}};
  if (error.field.empty())
    return {rpc_error::kInvalidParams, "invalid params: " + error.message, protocol::json{{"field", ""}}};
  return protocol::invalid_params(error.field, problem_of(error.message, error.field));
}

}  // namespace

protocol::RpcError to_rpc_error(const Error& error) {
  switch (error.code) {
    case ErrorCode::kInvalidInput: return invalid_input(error);
    case ErrorCode::kNotFound: return protocol::request_failed(kind::kNotFound, error.message);
    case ErrorCode::kWrongState: return protocol::request_failed(kind::kWrongState, error.message);
    case ErrorCode::kLimitExceeded: return protocol::request_failed(kind::kLimitExceeded, error.message);
    case ErrorCode::kUnavailable: return protocol::request_failed(kind::kUnavailable, error.message);
    case ErrorCode::kCancelled: return {rpc_error::kRequestCancelled, error.message, nullptr};
    case ErrorCode::kInternal: break;
  }
  return {rpc_error::kInternalError, error.message, nullptr};
}

}  // namespace lockroom::api
