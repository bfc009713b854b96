// VmTemplate: a pristine snapshot that new sandboxes are restored from, instead of booting.
//
// create() boots a guest from `spec` with its RAM in a shared file (on /dev/shm when there is
// one), waits until it is ready (the spec's readiness check may prepare the guest further, e.g.
// import a workspace), saves its device state (snapshot.h), and kills it. What remains is the RAM
// file and the state file; restore_spec() gives the VmSpec of a new sandbox that maps that RAM
// copy-on-write and resumes from the state — each one fresh, never reused.
//
// An ephemeral template (create()) lives as long as this object: its files are deleted with it
// (running restores keep their private mappings). A stored one (create_stored(), from_stored())
// lives in lockroom's cache (template_store.h) for later processes too; remove_from_store()
// drops it when a restore from it failed. Loop thread only.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>

#include "server/common/result.h"
#include "server/vm/snapshot.h"
#include "server/vm/template_store.h"
#include "server/vm/vm.h"

namespace lockroom::vm {

class VmTemplate {
 public:
  using Done = std::function<void(Result<std::shared_ptr<VmTemplate>>)>;
  static void create(uv_loop_t* loop, VmSpec spec, Done done);
  // Boots and snapshots like create(), then publishes the template under `meta.key` in `dirs`
  // (meta names key, identity, kind and the workspace; the rest is filled in). When another
  // process published the same key first, its template is used and this one discarded.
  // Returns a function that stops the build (its guest is killed, `done` reports the error).
  static std::function<void()> create_stored(uv_loop_t* loop, VmSpec spec, TemplateDirs dirs, TemplateMeta meta, Done done);
  // A template found in the store; `spec` is the machine it was made for (the key guarantees it).
  static std::shared_ptr<VmTemplate> from_stored(VmSpec spec, TemplateDirs dirs, StoredTemplate stored);
  ~VmTemplate();
  VmTemplate(const VmTemplate&) = delete;
  VmTemplate& operator=(const VmTemplate&) = delete;

  // A sandbox restored from this template; `after_restore` checks the resumed guest answers.
  VmSpec restore_spec(const std::string& name, ReadinessCheck after_restore) const;
  const SnapshotInfo& snapshot() const { return snapshot_; }
  std::chrono::milliseconds boot_time() const { return boot_time_; }
  bool stored() const { return stored_; }
  // The machine it was made on (its RAM file in spec().qemu.ram_file).
  const VmSpec& spec() const { return spec_; }
  // Stored templates: what meta.json says (key, kind, workspace commit…).
  const TemplateMeta& meta() const { return meta_; }
  // Removes a stored template from the cache (blocking, small): a restore from it failed. Sandboxes
  // already restored keep their mappings; this object's restore_spec() must not be used again.
  void remove_from_store();

 private:
  VmTemplate() = default;
  // Returns a function that kills the guest while it boots or saves.
  static std::function<void()> boot_and_save(uv_loop_t* loop, VmSpec spec, std::shared_ptr<VmTemplate> t,
                                             std::function<void(Result<void>)> saved);
  VmSpec spec_;
  std::filesystem::path dir_;       // holds the state file
  std::filesystem::path ram_file_;
  SnapshotInfo snapshot_;
  std::chrono::milliseconds boot_time_{0};
  bool stored_ = false;
  TemplateDirs dirs_;
  TemplateMeta meta_;
};

}  // namespace lockroom::vm
