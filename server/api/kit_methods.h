// The editor face of kits: kit/list (every kit the editor could offer for a workspace, with where
// it was found and whether it reads) and kit/validate (a stack of kits resolved and merged the
// way sandbox/create would, or the error sandbox/create would give). protocol/kits.md has the
// wire format. Kit files are read on libuv's thread pool; answers come on the loop thread.
#pragma once

#include <uv.h>

#include "server/rpc/dispatcher.h"

namespace lockroom::api {

// Registers kit/list and kit/validate; the file work runs on `loop`'s thread pool.
void bind_kit_methods(rpc::Dispatcher& dispatcher, uv_loop_t* loop);

}  // namespace lockroom::api
