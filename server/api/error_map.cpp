// to_rpc_error; see error_map.h.
#include "server/api/error_map.h"

namespace lockroom::api {

namespace rpc_error = protocol::rpc_error;

protocol::RpcError to_rpc_error(const Error& error) {
  auto failed = [&](const char* kind) {
    return protocol::RpcError{rpc_error::kRequestFailed, error.message, protocol::json{{"kind", kind}}};
  };
  switch (error.code) {
    case ErrorCode::kInvalidInput: return {rpc_error::kInvalidParams, error.message, nullptr};
    case ErrorCode::kNotFound: return failed("notFound");
    case ErrorCode::kWrongState: return failed("wrongState");
    case ErrorCode::kLimitExceeded: return failed("limitExceeded");
    case ErrorCode::kUnavailable: return failed("unavailable");
    case ErrorCode::kCancelled: return {rpc_error::kRequestCancelled, error.message, nullptr};
    case ErrorCode::kInternal: break;
  }
  return {rpc_error::kInternalError, error.message, nullptr};
}

}  // namespace lockroom::api
