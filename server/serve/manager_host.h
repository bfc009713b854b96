// ManagerHost: the SessionRouter's view of the SandboxManager (session_router.h's RouterHost).
//
// A detached sandbox's unapplied changes are found with one refresh of its workspace (a guest
// round trip, done once, when the short grace has run out): any change listed means "keep it".
// A sandbox without a workspace has none; a refresh that fails keeps the sandbox too (lockroom
// cannot tell, and losing work is worse than keeping a VM). Note that the refresh becomes the
// sandbox's latest listing, as a `lockroom diff` would. Loop thread only.
#pragma once

#include "server/core/sandbox_manager.h"
#include "server/serve/session_router.h"

namespace lockroom::serve {

class ManagerHost final : public RouterHost {
 public:
  // The manager is made after the router (the router is among its events): set it before use.
  void set_manager(core::SandboxManager& manager) { manager_ = &manager; }

  std::optional<std::string> sandbox_of(const std::string& process_id) const override;
  void has_unapplied_changes(const std::string& sandbox_id, std::function<void(bool)> done) override;
  void destroy_detached(const std::string& sandbox_id, const std::string& message) override;

 private:
  core::SandboxManager* manager_ = nullptr;
};

}  // namespace lockroom::serve
