// TemplatePool: the templates a SandboxManager restores sandboxes from.
//
// Base templates, one per machine (image, shape, QEMU, accelerator…; vm/template_store.h keys
// them): kept in memory once known, else found in lockroom's cache (checked on a worker thread),
// else booted, snapshotted and stored for later processes. A template whose restore failed is
// dropped (from memory and the cache) so the next request boots a fresh one.
//
// Workspace templates: after a sandbox imported a workspace, a short-lived VM of the same
// machine (never the user's sandbox) snapshots that workspace in the background — boot, fresh
// time and entropy, a snapshot of the host folder imported at /workspace, save, kill — and stores
// it keyed by the base, the folder's real path and the snapshot options. A later create on that
// folder restores from it and moves only what changed since (SandboxWorkspace::import_over).
// One background build at a time; the least recently used beyond a count and byte cap are
// evicted. Without persistence (tests, or a cache that cannot be made private) templates live in
// memory only and there are no workspace templates. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <uv.h>

#include "server/common/result.h"
#include "server/core/guest_link.h"
#include "server/core/sandbox_workspace.h"
#include "server/core/wait_list.h"
#include "server/vm/template_store.h"
#include "server/vm/vm_template.h"

namespace lockroom::core {

struct TemplatePoolConfig {
  vm::TemplateDirs dirs;
  bool persistent = true;
  std::size_t max_base = 4;
  std::uint64_t max_base_bytes = 4ull << 30;
  std::size_t max_workspace = 4;
  std::uint64_t max_workspace_bytes = 2ull << 30;
  std::filesystem::path cache;  // for workspace stores (SandboxWorkspace)
  std::chrono::milliseconds import_timeout{120000};
};

// A base template, and whether this request booted it.
struct BaseTemplate {
  std::shared_ptr<vm::VmTemplate> tpl;
  std::string identity;
  bool booted = false;
  bool from_cache = false;  // loaded from a previous process's store
};

class TemplatePool {
 public:
  using BaseDone = std::function<void(Result<BaseTemplate>)>;
  TemplatePool(uv_loop_t* loop, TemplatePoolConfig config);
  ~TemplatePool();
  TemplatePool(const TemplatePool&) = delete;
  TemplatePool& operator=(const TemplatePool&) = delete;

  // The base template for `spec` (a machine running `image_hash`).
  void base(const vm::VmSpec& spec, const std::string& image_hash, BaseDone done);
  // A restore from `tpl` failed: forget it here and in the cache; `done` runs when it is gone.
  void discard(const std::shared_ptr<vm::VmTemplate>& tpl, std::function<void()> done);

  // The stored workspace template for `request` on `base`, if there is a valid one (else null).
  void find_workspace(const BaseTemplate& base, const WorkspaceRequest& request,
                      std::function<void(std::shared_ptr<vm::VmTemplate>)> done);
  // Builds (or rebuilds) the workspace template for `request` on `base`'s machine in the
  // background, unless one is being built.
  void build_workspace(const BaseTemplate& base, const WorkspaceRequest& request);
  // Runs `done` when no background build is running (at once if none is).
  void when_idle(std::function<void()> done);

  std::size_t boots() const { return boots_; }               // base templates booted by this pool
  std::size_t workspace_builds() const { return ws_builds_; }  // workspace templates stored
  // Stops a background build (its VM is killed and its files removed); `done` runs after.
  void shutdown(std::function<void()> done);

 private:
  void boot_base(const vm::VmSpec& spec, const std::string& key, const std::string& identity);

  uv_loop_t* loop_;
  TemplatePoolConfig config_;
  std::map<std::string, std::shared_ptr<vm::VmTemplate>> bases_;  // by key
  std::map<std::string, WaitList<BaseTemplate>> base_waiters_;
  bool building_workspace_ = false;
  std::function<void()> cancel_build_;
  std::vector<std::function<void()>> idle_waiters_;
  std::size_t boots_ = 0;
  std::size_t ws_builds_ = 0;
  bool shutting_down_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Connects to a booting template guest's agent: a hello that times out while the guest still
// boots (slow under TCG on a busy host) is retried on a new connection until `deadline`, or
// until the VM goes away (each attempt dials for at most 2 s).
void connect_booting_guest(vm::Vm& vm, std::chrono::steady_clock::time_point deadline,
                           std::function<void(Result<std::unique_ptr<GuestLink>>)> done);

// A digest of the snapshot options that decide what a workspace's snapshot may contain.
std::string snapshot_options_digest(const WorkspaceRequest& request);

}  // namespace lockroom::core
