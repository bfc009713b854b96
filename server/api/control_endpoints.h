// ControlEndpoints: a control socket for each live sandbox of this process, so that `lockroom
// diff` and `lockroom apply`, run by the same user in another process, can review and apply
// the sandbox's workspace changes while it still runs.
//
// It sits between the SandboxManager and the process's own SandboxEvents (the editor face in
// `serve`, the terminal in `lockroom run`) and passes every event on unchanged. When a sandbox
// becomes ready it serves `<its 0700 state dir>/control.sock` (control_socket.h) with the review
// methods only — changes/list, changes/diff, changes/content, changes/apply, changes/discard,
// for that sandbox alone; nothing creates sandboxes or processes — and names the socket in the
// sandbox's sandbox.json (sandbox_registry.h), where the CLI finds it. The socket goes when the
// sandbox stops. A sandbox created without a workspace answers with the methods' own error
// ("has no workspace"). Loop thread only.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <uv.h>

#include "server/api/control_socket.h"
#include "server/core/forwarding_events.h"
#include "server/core/sandbox_manager.h"

namespace lockroom::api {

inline constexpr const char* kControlSocketName = "control.sock";

class ControlEndpoints final : public core::ForwardingEvents {
 public:
  // `state_root` is the manager's state dir (ManagerConfig::paths.state); `inner` gets every event.
  ControlEndpoints(uv_loop_t* loop, std::filesystem::path state_root, core::SandboxEvents& inner);
  ~ControlEndpoints() override;
  ControlEndpoints(const ControlEndpoints&) = delete;
  ControlEndpoints& operator=(const ControlEndpoints&) = delete;

  // The manager whose sandboxes are served; it is made after this object, with this as its events.
  void attach(core::SandboxManager& manager) { manager_ = &manager; }
  // Serves sandbox `sandbox_id` (done on its own when the sandbox becomes ready) and records the
  // socket in its sandbox.json; returns the socket's path. Serving it again is a no-op.
  Result<std::filesystem::path> open(const std::string& sandbox_id);
  void close(const std::string& sandbox_id);
  std::size_t open_count() const { return sockets_.size(); }

  void state_changed(const std::string& id, core::SandboxState state, core::StopReason reason, const std::string& message) override;

 private:
  uv_loop_t* loop_;
  std::filesystem::path state_root_;
  core::SandboxManager* manager_ = nullptr;
  std::map<std::string, std::unique_ptr<ControlSocket>> sockets_;  // by sandbox id
};

}  // namespace lockroom::api
