// TemplatePool; see template_pool.h.
#include "server/core/template_pool.h"

#include "server/core/host_random.h"

#include <sys/random.h>
#include <climits>
#include <cstdlib>
#include <ctime>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "server/common/uv_work.h"
#include "server/core/guest_link.h"
#include "server/vm/image/sha256.h"

namespace lockroom::core {

namespace fs = std::filesystem;
namespace wire = protocol::channel;

namespace {

struct Keyed {
  std::string identity, key;
};



// Loads `key` for `identity`; a template that is there but fails its checks is removed.
std::optional<vm::StoredTemplate> load_or_remove(const vm::TemplateDirs& dirs, const std::string& key, const std::string& identity,
                                                 vm::TemplateKind kind) {
  auto stored = vm::load_stored(dirs, key, identity);
  if (stored && stored->meta.kind == kind) return std::move(*stored);
  if (!stored && stored.error().code == ErrorCode::kNotFound) return std::nullopt;
  spdlog::warn("template {} in the cache is not usable ({}); removing it", key,
               stored ? std::string("of another kind") : stored.error().message);
  vm::remove_stored(dirs, key);
  return std::nullopt;
}

std::string real_path(const std::string& path) {
  char real[PATH_MAX];
  return realpath(path.c_str(), real) ? std::string(real) : std::string();
}

}  // namespace

void connect_booting_guest(vm::Vm& vm, std::chrono::steady_clock::time_point deadline,
                           std::function<void(Result<std::unique_ptr<GuestLink>>)> done) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return done(make_error(ErrorCode::kLimitExceeded, "the template guest's agent never answered"));
  // Each attempt dials for at most 2 s, so a guest that was killed meanwhile ends the retries.
  auto attempt = std::min(left, std::chrono::milliseconds(2000));
  auto lifetime = vm.lifetime();
  vm::Vm* raw = &vm;
  GuestLink::connect(vm.loop(), vm.paths().channel_socket, attempt, nullptr,
                     [raw, lifetime, deadline, done](Result<std::unique_ptr<GuestLink>> link) {
                       auto alive = lifetime.lock();
                       if (!alive || !*alive) return done(make_error(ErrorCode::kCancelled, "the template guest went away"));
                       if (link || std::chrono::steady_clock::now() >= deadline) return done(std::move(link));
                       spdlog::debug("template guest not answering yet ({}); connecting again", link.error().message);
                       connect_booting_guest(*raw, deadline, done);
                     });
}

std::string snapshot_options_digest(const WorkspaceRequest& r) {
  nlohmann::json j = {{"withhold", r.secrets.withhold}, {"allow", r.secrets.allow}, {"replaceDefaults", r.secrets.replace_defaults},
                      {"maxFiles", r.limits.max_files}, {"maxTotalBytes", r.limits.max_total_bytes},
                      {"maxFileBytes", r.limits.max_file_bytes}};
  return vm::image::sha256_hex(j.dump()).substr(0, 32);
}

TemplatePool::TemplatePool(uv_loop_t* loop, TemplatePoolConfig config) : loop_(loop), config_(std::move(config)) {
  if (!config_.persistent) return;
  if (auto ok = vm::prepare_template_dirs(config_.dirs); !ok) {
    spdlog::warn("templates will not be kept for later runs: {}", ok.error().message);
    config_.persistent = false;
    return;
  }
  auto dirs = config_.dirs;
  run_blocking<std::size_t>(loop_, [dirs] { return Result<std::size_t>(vm::sweep_stale(dirs)); }, [](Result<std::size_t> n) {
    if (n && *n) spdlog::info("removed {} template files left by lockroom processes that are gone", *n);
  });
}

TemplatePool::~TemplatePool() {
  *alive_ = false;
  if (cancel_build_) cancel_build_();
}

// --- base templates ----------------------------------------------------------------------------

void TemplatePool::base(const vm::VmSpec& spec, const std::string& image_hash, BaseDone done) {
  auto machine = spec.qemu;
  auto alive = alive_;
  run_blocking<Keyed>(
      loop_,
      [machine, image_hash]() -> Result<Keyed> {
        auto identity = vm::template_identity(machine, image_hash);
        return Keyed{identity, vm::template_key(identity)};
      },
      [this, alive, spec, done](Result<Keyed> keyed) {
        if (!*alive) return;
        if (!keyed) return done(keyed.error());
        // Named copies, not a structured binding: clang 14 (the fuzz build) cannot capture those.
        std::string identity = keyed->identity;
        std::string key = keyed->key;
        if (auto it = bases_.find(key); it != bases_.end()) return done(BaseTemplate{it->second, identity, false, false});
        if (!base_waiters_[key].join(done)) return;
        if (!config_.persistent) return boot_base(spec, key, identity);
        auto dirs = config_.dirs;
        run_blocking<std::optional<vm::StoredTemplate>>(
            loop_, [dirs, key, identity] { return Result<std::optional<vm::StoredTemplate>>(load_or_remove(dirs, key, identity, vm::TemplateKind::kBase)); },
            [this, alive, spec, key, identity](Result<std::optional<vm::StoredTemplate>> stored) {
              if (!*alive) return;
              if (!stored || !*stored) return boot_base(spec, key, identity);
              auto tpl = vm::VmTemplate::from_stored(spec, config_.dirs, std::move(**stored));
              spdlog::info("template {}: restored from the cache (booted in {} ms by an earlier run)", key, tpl->boot_time().count());
              bases_[key] = tpl;
              base_waiters_[key].finish(BaseTemplate{tpl, identity, false, true});
            });
      });
}

void TemplatePool::boot_base(const vm::VmSpec& spec, const std::string& key, const std::string& identity) {
  ++boots_;
  auto alive = alive_;
  auto finish = [this, alive, key, identity](Result<std::shared_ptr<vm::VmTemplate>> tpl) {
    if (!*alive) return;
    if (!tpl) return base_waiters_[key].finish(tpl.error());
    spdlog::info("template {}: booted in {} ms, snapshot {} bytes{}", key, (*tpl)->boot_time().count(), (*tpl)->snapshot().state_bytes,
                 (*tpl)->stored() ? ", kept in the cache" : "");
    if (!shutting_down_) bases_[key] = *tpl;
    if ((*tpl)->stored()) {
      auto dirs = config_.dirs;
      auto max = config_.max_base;
      auto bytes = config_.max_base_bytes;
      run_blocking<std::size_t>(
          loop_, [dirs, max, bytes, key] { return Result<std::size_t>(vm::evict(dirs, vm::TemplateKind::kBase, max, bytes, key).size()); },
          [](Result<std::size_t>) {});
    }
    base_waiters_[key].finish(BaseTemplate{*tpl, identity, true, false});
  };
  if (!config_.persistent) return vm::VmTemplate::create(loop_, spec, finish);
  vm::TemplateMeta meta;
  meta.key = key;
  meta.identity = identity;
  meta.kind = vm::TemplateKind::kBase;
  vm::VmTemplate::create_stored(loop_, spec, config_.dirs, meta, finish);
}

void TemplatePool::discard(const std::shared_ptr<vm::VmTemplate>& tpl, std::function<void()> done) {
  for (auto it = bases_.begin(); it != bases_.end();) it = it->second == tpl ? bases_.erase(it) : std::next(it);
  if (!tpl->stored()) return done();
  spdlog::warn("template {}: a restore from it failed; removing it from the cache", tpl->meta().key);
  auto alive = alive_;
  run_blocking<bool>(
      loop_, [tpl] { tpl->remove_from_store(); return Result<bool>(true); },
      [alive, done](Result<bool>) {
        if (*alive) done();
      });
}

// --- workspace templates -----------------------------------------------------------------------

void TemplatePool::find_workspace(const BaseTemplate& base, const WorkspaceRequest& request,
                                  std::function<void(std::shared_ptr<vm::VmTemplate>)> done) {
  if (!config_.persistent || !base.tpl) return done(nullptr);
  auto dirs = config_.dirs;
  std::string base_identity = base.identity;
  std::string path = request.path;
  std::string digest = snapshot_options_digest(request);
  auto spec = base.tpl->spec();
  auto alive = alive_;
  run_blocking<std::optional<vm::StoredTemplate>>(
      loop_,
      [dirs, base_identity, path, digest]() -> Result<std::optional<vm::StoredTemplate>> {
        std::string real = real_path(path);
        if (real.empty()) return std::optional<vm::StoredTemplate>();
        auto identity = vm::workspace_template_identity(base_identity, real, digest);
        return load_or_remove(dirs, vm::template_key(identity), identity, vm::TemplateKind::kWorkspace);
      },
      [this, alive, spec, done](Result<std::optional<vm::StoredTemplate>> stored) {
        if (!*alive) return;
        if (!stored || !*stored || (*stored)->meta.workspace_commit.empty()) return done(nullptr);
        done(vm::VmTemplate::from_stored(spec, config_.dirs, std::move(**stored)));
      });
}

void TemplatePool::build_workspace(const BaseTemplate& base, const WorkspaceRequest& request) {
  if (!config_.persistent || building_workspace_ || shutting_down_ || !base.tpl) return;
  const vm::VmSpec& spec = base.tpl->spec();
  building_workspace_ = true;
  auto alive = alive_;
  auto finished = [this, alive] {
    if (!*alive) return;
    building_workspace_ = false;
    cancel_build_ = nullptr;
    auto waiters = std::move(idle_waiters_);
    idle_waiters_.clear();
    for (auto& w : waiters) w();
  };
  std::string base_identity = base.identity;
  std::string digest = snapshot_options_digest(request);
  // The template gets a snapshot of its own (taken now), not the sandbox's.
  SandboxWorkspace::snapshot(loop_, config_.cache, request, [this, alive, spec, base_identity, digest, finished](
                                                                Result<std::unique_ptr<SandboxWorkspace>> taken) {
    if (!*alive) return;
    if (!taken || shutting_down_) {
      if (!taken) spdlog::warn("no workspace template: {}", taken.error().message);
      return finished();
    }
    std::shared_ptr<SandboxWorkspace> ws(std::move(*taken));
    vm::TemplateMeta meta;
    meta.identity = vm::workspace_template_identity(base_identity, ws->host_path(), digest);
    meta.key = vm::template_key(meta.identity);
    meta.kind = vm::TemplateKind::kWorkspace;
    meta.workspace_path = ws->host_path();
    meta.workspace_commit = ws->base().commit_id;
    meta.workspace_branch = ws->base().branch.value_or(wire::kDefaultBranch);
    vm::VmSpec build = spec;
    build.name = "ws-template";
    auto timeout = config_.import_timeout;
    // Ready when the workspace is in: connect, fresh time and entropy, import, close the link so
    // the snapshot holds an agent waiting for a new host.
    build.readiness = [ws, timeout](vm::Vm& vm, std::function<void(Result<void>)> ready) {
      auto deadline = std::chrono::steady_clock::now() + timeout;
      connect_booting_guest(vm, deadline, [ws, ready](Result<std::unique_ptr<GuestLink>> link) {
        if (!link) return ready(link.error());
        auto held = std::make_shared<std::unique_ptr<GuestLink>>(std::move(*link));
        auto close_then = [held, ready](Result<void> r) { close_and_release(std::move(*held), [ready, r] { ready(r); }); };
        wire::ResumeParams resume;
        resume.unix_time_ns = unix_time_ns();
        resume.entropy = random_entropy(64);
        (*held)->agent().resume(resume, [ws, held, close_then](Result<wire::ResumeResult> r) {
          if (!r) return close_then(r.error());
          if (!*held) return close_then(make_error(ErrorCode::kUnavailable, "the guest link closed"));
          ws->import((*held)->agent(), [close_then](Result<WorkspaceTransfer> t) {
            if (!t) return close_then(t.error());
            close_then({});
          });
        });
      });
    };
    auto key = meta.key;
    spdlog::info("workspace template {}: building for {} at {}", key, meta.workspace_path, meta.workspace_commit.substr(0, 12));
    cancel_build_ = vm::VmTemplate::create_stored(loop_, build, config_.dirs, meta, [this, alive, key, finished](
                                                                                      Result<std::shared_ptr<vm::VmTemplate>> tpl) {
      if (!*alive) return;
      if (!tpl) {
        // Stopped because lockroom is ending (a short `lockroom run`): expected, not a problem.
        if (tpl.error().code == ErrorCode::kCancelled || shutting_down_)
          spdlog::debug("workspace template {} not made: {}", key, tpl.error().message);
        else
          spdlog::warn("workspace template {} not made: {}", key, tpl.error().message);
        return finished();
      }
      if ((*tpl)->stored()) ++ws_builds_;
      spdlog::info("workspace template {}: ready in {} ms", key, (*tpl)->boot_time().count());
      auto dirs = config_.dirs;
      auto max = config_.max_workspace;
      auto bytes = config_.max_workspace_bytes;
      run_blocking<std::size_t>(
          loop_, [dirs, max, bytes, key] { return Result<std::size_t>(vm::evict(dirs, vm::TemplateKind::kWorkspace, max, bytes, key).size()); },
          [finished](Result<std::size_t>) { finished(); });
    });
  });
}

void TemplatePool::when_idle(std::function<void()> done) {
  if (!building_workspace_) return done();
  idle_waiters_.push_back(std::move(done));
}

void TemplatePool::shutdown(std::function<void()> done) {
  shutting_down_ = true;
  bases_.clear();
  if (cancel_build_) cancel_build_();
  when_idle(std::move(done));
}

}  // namespace lockroom::core
