// Mapping core errors to JSON-RPC errors at the editor-face edge.
//
// Invalid input is -32602 with `data.field` (the dotted path of the field, "" when the problem
// is not one field's) and the message `invalid params: "<field>" <problem>`, the format of every
// -32602 (protocol/params.h). A request that was understood but cannot be done is -32803 with
// `data.kind` telling which (notFound, wrongState, limitExceeded, unavailable); cancellation is
// -32800; anything else -32603.
#pragma once

#include "protocol/jsonrpc.h"
#include "server/common/result.h"

namespace lockroom::api {

protocol::RpcError to_rpc_error(const Error& error);

}  // namespace lockroom::api
