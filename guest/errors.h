// Building the agent's JSON-RPC errors (codes in protocol/channel/messages.h) from errno values
// and from parse failures, so every failing handler answers the same way:
//   {"code": -33010, "message": "file.read: /etc/nope: No such file or directory",
//    "data": {"errno": "ENOENT"}}
#pragma once

#include <string>
#include <variant>

#include "protocol/jsonrpc.h"
#include "server/common/result.h"

namespace lockroom::agent {

using protocol::json;
using protocol::RpcError;

// What a handler returns: a result, or the error to answer with.
using Outcome = std::variant<json, RpcError>;

// An error for a failed system call: the code follows errno (ENOENT → not found, EACCES →
// permission denied, ...), the message is "<what>: <strerror>", data names the errno.
RpcError errno_error(int err, const std::string& what);
RpcError make_rpc_error(int code, std::string message, json data = nullptr);
// A parse failure from protocol/channel/messages.h as -32602.
RpcError invalid_params(const Error& error);

}  // namespace lockroom::agent
