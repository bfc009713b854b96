// VmTemplate; see vm_template.h.
#include "server/vm/vm_template.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

namespace lockroom::vm {

namespace fs = std::filesystem;

namespace {
std::atomic<unsigned> g_template_seq{0};

fs::path ram_dir(const fs::path& fallback) {
  std::error_code ec;
  return fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fallback;
}
}  // namespace

VmTemplate::~VmTemplate() {
  std::error_code ec;
  if (!ram_file_.empty()) fs::remove(ram_file_, ec);
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

void VmTemplate::create(uv_loop_t* loop, VmSpec spec, Done done) {
  std::shared_ptr<VmTemplate> t(new VmTemplate());
  std::string id = std::to_string(getpid()) + "-" + std::to_string(++g_template_seq);
  t->dir_ = spec.state_root / "templates" / id;
  std::error_code ec;
  fs::create_directories(t->dir_.parent_path(), ec);
  if (mkdir(t->dir_.c_str(), 0700) != 0) {
    t->dir_.clear();
    return done(make_error(ErrorCode::kUnavailable, "cannot create the template dir under " + spec.state_root.string()));
  }
  t->ram_file_ = ram_dir(t->dir_) / ("lockroom-" + id + ".ram");
  spec.qemu.ram = RamMode::kTemplate;
  spec.qemu.ram_file = t->ram_file_;
  spec.name = "template";
  t->spec_ = spec;

  struct State {
    std::unique_ptr<Vm> vm;
    std::optional<Error> error;
    std::uint64_t started = 0;
  };
  auto st = std::make_shared<State>();
  st->started = uv_now(loop);
  fs::path state_file = t->dir_ / "device.state";
  VmCallbacks cb;
  cb.on_ready = [=](Result<void> r) {
    if (!r) {
      st->error = make_error(r.error().code, "the template guest did not start: " + r.error().message);
      return;  // the Vm kills itself; on_exit reports
    }
    t->boot_time_ = std::chrono::milliseconds(uv_now(loop) - st->started);
    save_snapshot(*st->vm, state_file, std::chrono::milliseconds(30000), [=](Result<SnapshotInfo> s) {
      if (s) t->snapshot_ = *s;
      else st->error = s.error();
      st->vm->kill();
    });
  };
  cb.on_exit = [=](const VmExit& exit) {
    auto vm = std::move(st->vm);  // destroyed when this callback returns
    if (!st->error && !exit.requested) st->error = make_error(ErrorCode::kUnavailable, "the template guest died: " + exit.reason);
    if (st->error) return done(*st->error);
    done(t);
  };
  auto vm = Vm::start(loop, spec, cb);
  if (!vm) return done(vm.error());
  st->vm = std::move(*vm);
}

VmSpec VmTemplate::restore_spec(const std::string& name, ReadinessCheck after_restore) const {
  VmSpec spec = spec_;
  spec.name = name;
  spec.qemu.ram = RamMode::kRestore;
  spec.readiness = restore_readiness(dir_ / "device.state", std::move(after_restore));
  return spec;
}

}  // namespace lockroom::vm
