// Methods every lockroom connection offers, and the extra ones of the deterministic test mode.
//
// `lockroom/echo` answers with its params: a health check for clients and the unit of work of
// the round-trip benchmark. With --test-mode, `test/*` methods let transcript tests drive the
// dispatcher's guarantees through the real binary: a handler that drops its reply, one that
// replies twice, one that throws, a slow one to cancel, progress, window/logMessage, and a call
// from server to client. They are never registered otherwise.
#pragma once

#include "server/rpc/connection.h"

namespace lockroom::rpc {

void register_builtin_methods(Connection& connection);
void register_test_methods(Connection& connection);

}  // namespace lockroom::rpc
