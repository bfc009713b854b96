// SandboxManager's create path: a guest restored from the best template there is (a workspace
// template in memory or on disk, else the base one), the agent link made ready (resume, limits),
// then the workspace imported and the network set up before the sandbox is announced. The rest
// of the manager is in sandbox_manager.cpp.
#include "server/core/sandbox_manager.h"

#include <spdlog/spdlog.h>

#include "server/common/uv_defer.h"
#include "server/common/uv_handle.h"
#include "server/core/host_random.h"

namespace lockroom::core {

namespace wire = protocol::channel;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// Objects sent into a guest restored from a workspace template beyond which the template is
// rebuilt (in the background) at the newer snapshot.
constexpr std::uint64_t kRebuildWorkspaceObjects = 200;
constexpr std::uint64_t kRebuildWorkspaceBytes = 4ull << 20;

// Holds the agent link a readiness check made, until the sandbox adopts it.
struct LinkSlot {
  std::unique_ptr<GuestLink> link;
};

}  // namespace

// One create's way to its guest: the templates chosen, and where the id goes.
struct SandboxManager::Restoring {
  Resources limits;
  std::map<std::string, std::string> env;
  std::optional<WorkspaceRequest> workspace;
  std::vector<std::string> packages;
  std::vector<std::string> npm;
  CreateProgress progress;
  std::shared_ptr<CreateTimings> timings;
  Clock::time_point started;
  BaseTemplate base;
  std::shared_ptr<vm::VmTemplate> workspace_template;
  TemplateSource source = TemplateSource::kMemory;
  std::function<void(Result<std::string>)> done;
};

const char* template_source_name(TemplateSource source) {
  switch (source) {
    case TemplateSource::kMemory: return "memory";
    case TemplateSource::kCache: return "cache";
    case TemplateSource::kBooted: return "booted";
    case TemplateSource::kWorkspace: return "workspace";
  }
  return "memory";
}

SandboxManager::SandboxManager(uv_loop_t* loop, ManagerConfig config, SandboxEvents& events)
    : loop_(loop), config_(std::move(config)), events_(events) {
  TemplatePoolConfig pool;
  pool.dirs = config_.template_dirs.value_or(vm::default_template_dirs(config_.paths.cache));
  pool.persistent = config_.persistent_templates;
  pool.cache = config_.paths.cache;
  pool.import_timeout = config_.boot_timeout;
  templates_ = std::make_unique<TemplatePool>(loop_, std::move(pool));
}

SandboxManager::~SandboxManager() { *alive_ = false; }

// --- create ---------------------------------------------------------------------------------

void SandboxManager::create(CreateRequest request, CreateProgress progress, std::function<void(Result<CreateResult>)> done) {
  if (shutting_down_) return done(make_error(ErrorCode::kWrongState, "the server is shutting down"));
  auto limits = resolve_resources(request.resources, probe_host_capacity());
  if (!limits) return done(limits.error());
  auto started = Clock::now();
  auto timings = std::make_shared<CreateTimings>();
  auto alive = alive_;
  done = announce_when_created(request.caller_announces, std::move(done));
  // What sandbox/list tells of it besides its state.
  std::optional<std::string> workspace_path;
  if (request.workspace) workspace_path = request.workspace->path;
  done = [this, alive, workspace_path, kits = std::move(request.kits), label = std::move(request.label),
          done = std::move(done)](Result<CreateResult> result) {
    if (*alive && result)
      if (auto it = sandboxes_.find(result->sandbox_id); it != sandboxes_.end()) {
        SandboxFacts& facts = it->second->facts();
        facts.workspace = workspace_path;
        facts.kits = kits;
        facts.label = label;
        facts.template_source = template_source_name(result->template_source);
        if (result->audit_log) facts.audit_log = result->audit_log->string();
      }
    done(std::move(result));
  };

  // The guest starts while the workspace is snapshotted; the two meet in join().
  struct Join {
    std::optional<Result<std::string>> sandbox;
    std::optional<Result<std::unique_ptr<SandboxWorkspace>>> workspace;
  };
  auto join_state = std::make_shared<Join>();
  // Secrets: the guest's environment carries only their sentinels, in the variable the tool
  // reads (the host variable's name for an env secret, else the secret's name in capitals).
  if (request.network)
    for (const auto& secret : request.network->secrets) {
      std::string var = secret.from.kind == egress::SecretSource::Kind::kEnv ? secret.from.env : secret.sentinel().substr(std::string("LOCKROOM_SECRET_").size());
      request.env.try_emplace(var, secret.sentinel());
    }
  bool wants_workspace = request.workspace.has_value();
  auto join = [this, alive, join_state, wants_workspace, network = std::move(request.network), limits = *limits, timings, started, done]() {
    if (!*alive || !join_state->sandbox || (wants_workspace && !join_state->workspace)) return;
    auto& id = *join_state->sandbox;
    if (!id) return done(id.error());
    CreateResult result{*id, config_.accel, limits, *timings, std::nullopt, std::nullopt};
    if (auto use = template_use_.find(*id); use != template_use_.end()) result.template_source = use->second.source;
    std::unique_ptr<SandboxWorkspace> workspace;
    if (wants_workspace) {
      auto& ws = *join_state->workspace;
      if (!ws) {
        destroy(*id, [](Result<void>) {});
        return done(make_error(ws.error().code, "cannot copy the workspace into the sandbox: " + ws.error().message));
      }
      workspace = std::move(*ws);
      // Entries a review refuses mean the guest misbehaved: the editor hears of it.
      workspace->on_refused([this, id = *id](const MisbehaviourEvent& event) { guest_misbehaved(id, event); });
    }
    finish_create(*id, std::move(workspace), network, std::move(result), started, done);
  };

  if (wants_workspace) {
    auto snapshot_started = Clock::now();
    SandboxWorkspace::snapshot(loop_, config_.paths.cache, *request.workspace,
                               [alive, join_state, timings, snapshot_started, join](Result<std::unique_ptr<SandboxWorkspace>> ws) {
                                 if (!*alive) return;
                                 timings->snapshot_ms = ms_since(snapshot_started);
                                 join_state->workspace = std::move(ws);
                                 join();
                               });
  }
  if (progress) progress("Restoring a guest", 10);
  auto restoring = std::make_shared<Restoring>();
  restoring->limits = *limits;
  restoring->env = std::move(request.env);
  restoring->workspace = request.workspace;
  restoring->packages = request.packages;
  restoring->npm = request.npm;
  restoring->progress = progress;
  restoring->timings = timings;
  restoring->started = started;
  restoring->done = [alive, join_state, join](Result<std::string> id) {
    if (!*alive) return;
    join_state->sandbox = std::move(id);
    join();
  };
  ensure_template(*limits, restoring->packages, restoring->npm, progress, [this, alive, restoring](Result<BaseTemplate> base) {
    if (!*alive) return;
    if (!base) return restoring->done(make_error(base.error().code, "cannot start a guest: " + base.error().message));
    restoring->base = *base;
    restoring->source = base->booted ? TemplateSource::kBooted : base->from_cache ? TemplateSource::kCache : TemplateSource::kMemory;
    restoring->timings->template_ms = restoring->source == TemplateSource::kMemory ? 0 : ms_since(restoring->started);
    if (!restoring->workspace) return restore_guest(restoring, false);
    templates_->find_workspace(*base, *restoring->workspace, [this, alive, restoring](std::shared_ptr<vm::VmTemplate> ws_tpl) {
      if (!*alive) return;
      if (ws_tpl) {
        restoring->workspace_template = ws_tpl;
        restoring->source = TemplateSource::kWorkspace;
      }
      restore_guest(restoring, false);
    });
  });
}

// Restores the sandbox's guest from its template. A restore from a cached template that fails
// drops that template and tries once more: from the base template (instead of a workspace's), or
// from a freshly booted one.
void SandboxManager::restore_guest(std::shared_ptr<Restoring> r, bool retried) {
  auto tpl = r->workspace_template ? r->workspace_template : r->base.tpl;
  auto restore_started = Clock::now();
  auto alive = alive_;
  if (r->progress) r->progress(r->workspace_template ? "Restoring a guest from the workspace's template" : "Restoring a guest from the template", 60);
  restore(tpl, r->limits, r->env, [this, alive, r, tpl, retried, restore_started](Result<std::string> id) {
    if (!*alive) return;
    if (!id && !retried && tpl->stored() && !shutting_down_) {
      spdlog::warn("restoring from the cached template {} failed ({}); trying a fresh one", tpl->meta().key, id.error().message);
      return templates_->discard(tpl, [this, alive, r] {
        if (!*alive) return;
        if (r->workspace_template) {
          r->workspace_template = nullptr;
          r->source = TemplateSource::kMemory;
          return restore_guest(r, true);
        }
        ensure_template(r->limits, r->packages, r->npm, r->progress, [this, alive, r](Result<BaseTemplate> base) {
          if (!*alive) return;
          if (!base) return r->done(make_error(base.error().code, "cannot start a guest: " + base.error().message));
          r->base = *base;
          r->source = base->booted ? TemplateSource::kBooted : base->from_cache ? TemplateSource::kCache : TemplateSource::kMemory;
          r->timings->template_ms = ms_since(r->started);
          restore_guest(r, true);
        });
      });
    }
    if (id) {
      r->timings->restore_ms = ms_since(restore_started);
      template_use_[*id] = TemplateUse{r->base, r->workspace_template, r->source};
      if (r->workspace && r->progress) r->progress("Copying the workspace into the sandbox", 80);
    }
    r->done(std::move(id));
  });
}

// The sandbox is up: bring its workspace in (if any), then report it created.
void SandboxManager::finish_create(const std::string& id, std::unique_ptr<SandboxWorkspace> workspace, std::optional<NetworkRequest> network,
                                   CreateResult result, Clock::time_point started_at, std::function<void(Result<CreateResult>)> done) {
  if (!network) return import_workspace(id, std::move(workspace), std::move(result), started_at, std::move(done));
  auto sandbox = sandbox_for(id);
  if (!sandbox) return done(sandbox.error());
  channel::AgentClient* agent = (*sandbox)->agent();
  if (!agent) return done(make_error(ErrorCode::kUnavailable, "the sandbox's guest link is gone"));
  auto alive = alive_;
  NetworkHooks hooks;
  hooks.approve = [this, alive, id](const egress::ApprovalQuestion& question, egress::ApprovalReply reply) {
    if (!*alive) return reply(egress::ApprovalOutcome::not_asked(egress::NoAnswerReason::kSandboxGone));
    events_.approve_network(id, question, std::move(reply));
  };
  hooks.on_event = [this, alive, id](const egress::AuditRecord& record) {
    if (*alive) events_.network_event(id, record);
  };
  hooks.on_policy_changed = [this, alive, id](const egress::Policy& policy, PolicyChangeCause cause) {
    if (*alive) events_.network_policy_changed(id, policy, cause);
  };
  hooks.process_of_pid = [this, alive, id](std::int64_t pid) -> std::string {
    if (!*alive) return {};
    auto sandbox = sandbox_for(id);
    return sandbox ? (*sandbox)->process_id_of_pid(pid) : std::string();
  };
  auto audit_log = config_.paths.state / "audit" / (id + ".jsonl");
  auto held = std::make_shared<std::unique_ptr<SandboxWorkspace>>(std::move(workspace));
  // The CAs this lockroom trusts for upstream TLS (serve/run --upstream-ca), after the request's own.
  network->upstream_ca_files.insert(network->upstream_ca_files.end(), config_.upstream_ca_files.begin(), config_.upstream_ca_files.end());
  SandboxNetwork::start(loop_, id, std::move(*network), audit_log, *agent, (*sandbox)->lifetime(), std::move(hooks),
                        [this, alive, id, held, result, started_at, audit_log, done](Result<std::unique_ptr<SandboxNetwork>> net) mutable {
                          if (!*alive) return;
                          auto sandbox = sandbox_for(id);
                          if (!sandbox) return done(sandbox.error());
                          if (!net) {
                            destroy(id, [](Result<void>) {});
                            return done(net.error());
                          }
                          (*sandbox)->attach_network(std::move(*net));
                          result.audit_log = audit_log;
                          import_workspace(id, std::move(*held), std::move(result), started_at, std::move(done));
                        });
}

// The last step of a create: the workspace into the guest (if any), then the result.
void SandboxManager::import_workspace(const std::string& id, std::unique_ptr<SandboxWorkspace> workspace, CreateResult result,
                                      Clock::time_point started_at, std::function<void(Result<CreateResult>)> done) {
  TemplateUse use;
  if (auto it = template_use_.find(id); it != template_use_.end()) {
    use = std::move(it->second);
    template_use_.erase(it);
  }
  if (!workspace) {
    result.timings.total_ms = ms_since(started_at);
    return done(std::move(result));
  }
  auto sandbox = sandbox_for(id);
  if (!sandbox) return done(sandbox.error());
  SandboxWorkspace* ws = workspace.get();
  auto snapshot = ws->base();
  auto request = ws->request();
  (*sandbox)->attach_workspace(std::move(workspace));
  auto handle = (*sandbox)->workspace();
  if (!handle) return done(handle.error());
  auto alive = alive_;
  auto import_started = Clock::now();
  auto imported = [this, alive, id, snapshot, request, use, import_started, started_at, result, done](Result<WorkspaceTransfer> t) mutable {
    if (!*alive) return;
    if (!t) {
      destroy(id, [](Result<void>) {});
      return done(make_error(t.error().code, "cannot copy the workspace into the sandbox: " + t.error().message));
    }
    result.timings.import_ms = ms_since(import_started);
    result.timings.total_ms = ms_since(started_at);
    result.workspace = WorkspaceSummary{snapshot, *t};
    // The next sandbox on this workspace starts from its template: made now if there is none, or
    // made again when this one had to receive much more than the template held.
    bool stale = !use.workspace || t->objects > kRebuildWorkspaceObjects || t->pack_bytes > kRebuildWorkspaceBytes;
    if (stale && use.base.tpl && !shutting_down_) templates_->build_workspace(use.base, request);
    done(std::move(result));
  };
  if (use.workspace)
    return ws->import_over(*handle->second, use.workspace->meta().workspace_commit, use.workspace->meta().workspace_branch, imported);
  ws->import(*handle->second, imported);
}

void SandboxManager::restore(std::shared_ptr<vm::VmTemplate> tpl, Resources limits, std::map<std::string, std::string> env,
                             std::function<void(Result<std::string>)> done) {
  std::string id = new_sandbox_id();
  unannounced_.insert(id);
  auto slot = std::make_shared<LinkSlot>();
  auto alive = alive_;
  auto restore_timeout = config_.restore_timeout;
  wire::LimitsParams guest_limits = limits_params(limits);
  // After the restore: connect, then fresh time and entropy, then the limits the guest enforces.
  auto after_restore = [this, alive, slot, id, restore_timeout, guest_limits](vm::Vm& vm, std::function<void(Result<void>)> ready) {
    auto on_failed = [this, alive, id](const Error& e) {
      if (!*alive) return;
      if (auto it = sandboxes_.find(id); it != sandboxes_.end())
        it->second->channel_failed("the guest channel failed: " + e.message);
    };
    GuestLink::connect(vm.loop(), vm.paths().channel_socket, restore_timeout, on_failed,
                       [slot, ready, guest_limits](Result<std::unique_ptr<GuestLink>> link) {
                         if (!link) return ready(link.error());
                         slot->link = std::move(*link);
                         wire::ResumeParams resume;
                         resume.unix_time_ns = unix_time_ns();
                         resume.entropy = random_entropy(64);
                         slot->link->agent().resume(resume, [slot, ready, guest_limits](Result<wire::ResumeResult> r) {
                           if (!r) return ready(make_error(r.error().code, "the restored guest refused fresh time and entropy: " + r.error().message));
                           if (!slot->link) return ready(make_error(ErrorCode::kUnavailable, "the guest link closed"));
                           slot->link->agent().set_limits(guest_limits, [ready](Result<wire::LimitsResult> l) {
                             if (!l) return ready(l.error());
                             ready({});
                           });
                         });
                       });
  };
  vm::VmSpec spec = tpl->restore_spec("sandbox", after_restore);
  spec.boot_timeout = config_.restore_timeout;

  auto sandbox = std::make_unique<Sandbox>(loop_, id, limits, std::move(env), static_cast<SandboxEvents&>(*this));
  Sandbox* raw = sandbox.get();
  sandboxes_[id] = std::move(sandbox);
  auto vm_box = std::make_shared<std::unique_ptr<vm::Vm>>();
  vm::VmCallbacks callbacks;
  callbacks.on_ready = [this, alive, id, slot, vm_box, limits, done](Result<void> ready) {
    if (!*alive) return;
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return;  // destroyed while starting
    if (!ready) {
      close_and_release(std::move(slot->link));
      it->second->stop(StopReason::kGuestCrashed, "the guest did not start: " + ready.error().message);
      return done(make_error(ErrorCode::kUnavailable, "the guest did not start: " + ready.error().message));
    }
    publish_record(id, **vm_box, limits);
    it->second->adopt(std::move(*vm_box), std::move(slot->link));
    done(id);
  };
  callbacks.on_exit = [this, alive, id, vm_box](const vm::VmExit& exit) {
    if (!*alive) return;
    if (auto it = sandboxes_.find(id); it != sandboxes_.end()) it->second->vm_exited(exit);
    // A VM that exits before adoption is freed here, after its callback returns.
    if (*vm_box) defer(loop_, [vm_box] { vm_box->reset(); });
  };
  auto vm = vm::Vm::start(loop_, spec, callbacks);
  if (!vm) {
    raw->stop(StopReason::kGuestCrashed, vm.error().message);
    return done(vm.error());
  }
  *vm_box = std::move(*vm);
}

}  // namespace lockroom::core
