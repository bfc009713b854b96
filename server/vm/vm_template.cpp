// VmTemplate; see vm_template.h.
#include "server/vm/vm_template.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include <spdlog/spdlog.h>

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
  if (stored_) return;  // the cache keeps it for later processes
  std::error_code ec;
  if (!ram_file_.empty()) fs::remove(ram_file_, ec);
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

// Boots `spec` (RAM in t->ram_file_), waits for readiness, saves the state into t->dir_, kills it.
std::function<void()> VmTemplate::boot_and_save(uv_loop_t* loop, VmSpec spec, std::shared_ptr<VmTemplate> t,
                                                std::function<void(Result<void>)> saved) {
  spec.qemu.ram = RamMode::kTemplate;
  spec.qemu.ram_file = t->ram_file_;
  if (spec.name == "vm") spec.name = "template";
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
    if (st->error) return saved(*st->error);
    saved({});
  };
  auto vm = Vm::start(loop, spec, cb);
  if (!vm) {
    saved(vm.error());
    return [] {};
  }
  st->vm = std::move(*vm);
  std::weak_ptr<State> weak = st;
  return [weak] {
    auto s = weak.lock();
    if (!s || !s->vm) return;
    if (!s->error) s->error = make_error(ErrorCode::kCancelled, "the template build was stopped");
    s->vm->kill();
  };
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
  boot_and_save(loop, std::move(spec), t, [t, done](Result<void> r) {
    if (!r) return done(r.error());
    chmod(t->ram_file_.c_str(), 0600);  // QEMU creates it 0644
    done(t);
  });
}

std::function<void()> VmTemplate::create_stored(uv_loop_t* loop, VmSpec spec, TemplateDirs dirs, TemplateMeta meta, Done done) {
  auto build = begin_build(dirs, meta.key);
  if (!build) {
    done(build.error());
    return [] {};
  }
  std::shared_ptr<VmTemplate> t(new VmTemplate());
  t->dir_ = build->dir;
  t->ram_file_ = build->ram_file;
  t->dirs_ = dirs;
  return boot_and_save(loop, std::move(spec), t, [t, dirs, meta, build = *build, done](Result<void> r) mutable {
    if (!r) return done(r.error());  // t's destructor removes the build
    meta.boot_ms = t->boot_time_.count();
    auto published = publish_build(dirs, build, meta);
    if (!published) {
      spdlog::warn("template {} stays private to this process: {}", meta.key, published.error().message);
      chmod(t->ram_file_.c_str(), 0600);
      return done(t);
    }
    if (*published) {
      t->dir_ = dirs.root / meta.key;
      t->stored_ = true;
      t->meta_ = meta;
      auto loaded = load_stored(dirs, meta.key, meta.identity);
      if (loaded) t->meta_ = loaded->meta;
      return done(t);
    }
    // Another process published it first: use theirs when it checks out, else keep ours.
    auto theirs = load_stored(dirs, meta.key, meta.identity);
    if (!theirs) {
      spdlog::warn("template {} from another process is unusable ({}); this process keeps its own", meta.key, theirs.error().message);
      return done(t);
    }
    auto winner = from_stored(t->spec_, dirs, std::move(*theirs));
    return done(winner);  // t goes with this callback, and its build with it
  });
}

std::shared_ptr<VmTemplate> VmTemplate::from_stored(VmSpec spec, TemplateDirs dirs, StoredTemplate stored) {
  std::shared_ptr<VmTemplate> t(new VmTemplate());
  spec.qemu.ram = RamMode::kTemplate;
  spec.qemu.ram_file = stored.meta.ram_file;
  t->spec_ = std::move(spec);
  t->dir_ = stored.dir;
  t->ram_file_ = stored.meta.ram_file;
  t->boot_time_ = std::chrono::milliseconds(stored.meta.boot_ms);
  t->snapshot_.state_bytes = stored.meta.state_bytes;
  t->stored_ = true;
  t->dirs_ = std::move(dirs);
  t->meta_ = std::move(stored.meta);
  return t;
}

void VmTemplate::remove_from_store() {
  if (!stored_) return;
  remove_stored(dirs_, meta_.key);
}

VmSpec VmTemplate::restore_spec(const std::string& name, ReadinessCheck after_restore) const {
  VmSpec spec = spec_;
  spec.name = name;
  spec.qemu.ram = RamMode::kRestore;
  spec.readiness = restore_readiness(dir_ / "device.state", std::move(after_restore));
  return spec;
}

}  // namespace lockroom::vm
