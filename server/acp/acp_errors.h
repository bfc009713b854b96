// Error codes of the ACP face (ACP v1 uses JSON-RPC's, plus -32000 "authentication required" and
// -32002 "resource not found"), and lockroom's errors turned into them.
#pragma once

#include "protocol/jsonrpc.h"

namespace lockroom::acp {

inline constexpr int kAcpInternalError = -32603;
inline constexpr int kAcpAuthRequired = -32000;
inline constexpr int kAcpResourceNotFound = -32002;

// A lockroom error as the ACP peer sees it: `notFound` becomes -32002, invalid params stay
// -32602, everything else -32603; the message is kept and `data` keeps lockroom's
// ({kind} or {field}) so a client that knows lockroom can still branch on it.
inline protocol::RpcError acp_error_from_lockroom(const protocol::RpcError& e) {
  int code = kAcpInternalError;
  if (e.code == protocol::rpc_error::kInvalidParams) code = e.code;
  if (e.data.is_object() && e.data.value("kind", "") == "notFound") code = kAcpResourceNotFound;
  return protocol::RpcError{code, e.message, e.data};
}

}  // namespace lockroom::acp
