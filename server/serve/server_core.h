// ServerCore: the parts one lockroom server process has once, whatever its sessions: the
// SandboxManager and the chain its events go through — ProcessWatch (kits' own processes) →
// ControlEndpoints (each sandbox's control socket for `lockroom diff`/`apply`) → SessionRouter
// (to the session that owns the sandbox). Used by `serve --standalone` (one session) and the
// shared server (one per bridge). Loop thread only.
#pragma once

#include <uv.h>

#include "server/api/control_endpoints.h"
#include "server/core/process_watch.h"
#include "server/core/sandbox_manager.h"
#include "server/serve/manager_host.h"
#include "server/serve/session.h"
#include "server/serve/session_router.h"

namespace lockroom::serve {

struct ServerCore {
  ServerCore(uv_loop_t* loop, core::ManagerConfig config, RouterOptions options)
      : loop(loop), router(loop, host, options), control(loop, config.paths.state, router), watch(control), manager(loop, config, watch) {
    host.set_manager(manager);
    control.attach(manager);
  }
  SessionServices services(protocol::ServerInfo info, bool test_mode) {
    return SessionServices{loop, &manager, &watch, &router, std::move(info), test_mode};
  }

  uv_loop_t* loop;
  ManagerHost host;
  SessionRouter router;
  api::ControlEndpoints control;
  core::ProcessWatch watch;
  core::SandboxManager manager;
};

}  // namespace lockroom::serve
