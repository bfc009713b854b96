// The editor face of kits: kit/list (every kit the editor could offer for a workspace, with where
// it was found and whether it reads) and kit/validate (a stack of kits resolved and merged the
// way sandbox/create would, or the error sandbox/create would give). protocol/kits.md has the
// wire format. Kit files are read on libuv's thread pool; answers come on the loop thread.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <uv.h>

#include "server/rpc/dispatcher.h"

namespace lockroom::api {

// The editor's environment, where LOCKROOM_KIT_PATH and the user's config folder are read (a
// shared server's connection has its bridge's); null: this process's.
using ClientEnv = std::shared_ptr<const std::map<std::string, std::string>>;

// Registers kit/list and kit/validate; the file work runs on `loop`'s thread pool.
void bind_kit_methods(rpc::Dispatcher& dispatcher, uv_loop_t* loop, ClientEnv env = nullptr);

}  // namespace lockroom::api
