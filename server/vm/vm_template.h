// VmTemplate: a pristine snapshot that new sandboxes are restored from, instead of booting.
//
// create() boots a guest from `spec` with its RAM in a shared file (on /dev/shm when there is
// one), waits until it is ready, saves its device state (snapshot.h), and kills it. What remains
// is the RAM file and the state file; restore_spec() gives the VmSpec of a new sandbox that maps
// that RAM copy-on-write and resumes from the state — each one fresh, never reused. The files
// are deleted when the template is destroyed (running restores keep their private mappings).
// Loop thread only.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>

#include "server/common/result.h"
#include "server/vm/snapshot.h"
#include "server/vm/vm.h"

namespace lockroom::vm {

class VmTemplate {
 public:
  using Done = std::function<void(Result<std::shared_ptr<VmTemplate>>)>;
  static void create(uv_loop_t* loop, VmSpec spec, Done done);
  ~VmTemplate();
  VmTemplate(const VmTemplate&) = delete;
  VmTemplate& operator=(const VmTemplate&) = delete;

  // A sandbox restored from this template; `after_restore` checks the resumed guest answers.
  VmSpec restore_spec(const std::string& name, ReadinessCheck after_restore) const;
  const SnapshotInfo& snapshot() const { return snapshot_; }
  std::chrono::milliseconds boot_time() const { return boot_time_; }

 private:
  VmTemplate() = default;
  VmSpec spec_;
  std::filesystem::path dir_;       // holds the state file
  std::filesystem::path ram_file_;
  SnapshotInfo snapshot_;
  std::chrono::milliseconds boot_time_{0};
};

}  // namespace lockroom::vm
