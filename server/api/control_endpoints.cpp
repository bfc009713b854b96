// ControlEndpoints; see control_endpoints.h.
#include "server/api/control_endpoints.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "server/api/workspace_methods.h"
#include "server/core/sandbox_registry.h"

namespace lockroom::api {

namespace fs = std::filesystem;

ControlEndpoints::ControlEndpoints(uv_loop_t* loop, fs::path state_root, core::SandboxEvents& inner)
    : ForwardingEvents(inner), loop_(loop), state_root_(std::move(state_root)) {}

ControlEndpoints::~ControlEndpoints() = default;

Result<fs::path> ControlEndpoints::open(const std::string& sandbox_id) {
  if (auto it = sockets_.find(sandbox_id); it != sockets_.end()) return it->second->path();
  if (!manager_) return make_error(ErrorCode::kInternal, "bug: control endpoints used before attach()");
  auto record = core::find_own_record(state_root_, sandbox_id, static_cast<int>(getpid()));
  if (!record) return record.error();
  core::SandboxManager* manager = manager_;
  auto socket = ControlSocket::listen(loop_, record->state_dir / kControlSocketName, [manager, sandbox_id](rpc::Dispatcher& d) {
    bind_changes_methods(d, *manager, sandbox_id);
  });
  if (!socket) return socket.error();
  record->control_socket = (*socket)->path();
  if (auto written = core::write_sandbox_record(*record); !written) return written.error();
  fs::path path = (*socket)->path();
  sockets_[sandbox_id] = std::move(*socket);
  return path;
}

void ControlEndpoints::close(const std::string& sandbox_id) { sockets_.erase(sandbox_id); }

void ControlEndpoints::state_changed(const std::string& id, core::SandboxState state, core::StopReason reason, const std::string& message) {
  if (state == core::SandboxState::kReady) {
    if (auto opened = open(id); !opened)
      spdlog::warn("sandbox {}: `lockroom diff` and `lockroom apply` will not reach it: {}", id, opened.error().message);
  } else if (state != core::SandboxState::kCreating) {
    close(id);
  }
  next().state_changed(id, state, reason, message);
}

}  // namespace lockroom::api
