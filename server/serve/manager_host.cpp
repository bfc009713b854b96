// ManagerHost; see manager_host.h.
#include "server/serve/manager_host.h"

#include <spdlog/spdlog.h>

#include "server/workspace/review/changes.h"

namespace lockroom::serve {

std::optional<std::string> ManagerHost::sandbox_of(const std::string& process_id) const {
  return manager_ ? manager_->sandbox_of(process_id) : std::nullopt;
}

void ManagerHost::has_unapplied_changes(const std::string& sandbox_id, std::function<void(bool)> done) {
  if (!manager_) return done(false);
  auto workspace = manager_->workspace(sandbox_id);
  if (!workspace) return done(false);  // no workspace (or gone): nothing to lose
  auto [ws, agent] = *workspace;
  ws->refresh(*agent, [sandbox_id, done](Result<core::ChangeSet> changes) {
    if (!changes) {
      spdlog::warn("sandbox {}: cannot tell whether it holds unapplied changes ({}); keeping it", sandbox_id, changes.error().message);
      return done(true);
    }
    done(changes->changes && !changes->changes->list().empty());
  });
}

void ManagerHost::destroy_detached(const std::string& sandbox_id, const std::string& message) {
  if (!manager_) return;
  spdlog::info("sandbox {}: destroying it: {}", sandbox_id, message);
  manager_->destroy(sandbox_id, core::StopReason::kDetachedTimeout, message, [sandbox_id](Result<void> r) {
    if (!r) spdlog::debug("sandbox {}: {}", sandbox_id, r.error().message);
  });
}

}  // namespace lockroom::serve
