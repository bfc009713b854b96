// sandbox/* and process/* handlers; see sandbox_methods.h.
#include "server/api/sandbox_methods.h"

#include "protocol/sandbox.h"
#include "server/api/error_map.h"
#include "server/api/network_methods.h"
#include "server/api/workspace_methods.h"
#include "server/core/kit_request.h"
#include "server/core/kit_setup.h"
#include "server/rpc/progress.h"

namespace lockroom::api {

using protocol::json;
using protocol::ParamReader;
using rpc::Reply;

namespace {

json limits_json(const core::Resources& r) {
  return protocol::limits_json(protocol::LimitsWire{r.cpus, r.memory_mib, r.disk_mib, r.lifetime_seconds, r.max_processes, r.max_output_bytes});
}

core::ResourceRequest to_request(const protocol::ResourcesParams& p) {
  return core::ResourceRequest{p.cpus, p.memory_mib, p.disk_mib, p.timeout_seconds, p.max_processes, p.max_output_bytes};
}

core::WorkspaceRequest to_workspace_request(const protocol::WorkspaceParams& p) {
  core::WorkspaceRequest out;
  out.path = p.path;
  out.secrets.withhold = p.withhold;
  out.secrets.allow = p.allow;
  out.secrets.replace_defaults = p.replace_default_withhold;
  if (p.max_files) out.limits.max_files = static_cast<std::uint64_t>(*p.max_files);
  if (p.max_total_bytes) out.limits.max_total_bytes = static_cast<std::uint64_t>(*p.max_total_bytes);
  if (p.max_file_bytes) out.limits.max_file_bytes = static_cast<std::uint64_t>(*p.max_file_bytes);
  return out;
}

// Answers `reply` with null or the mapped error.
auto answer_void(Reply reply) {
  return [reply](Result<void> r) {
    if (r) reply.result(nullptr);
    else reply.error(to_rpc_error(r.error()));
  };
}

// The kits named in sandbox/create, found from the workspace and the editor's environment
// (`env`; null: this process's), or nothing when none are named.
Result<std::optional<kits::KitPlan>> read_kits(const protocol::SandboxCreateParams& p, const std::map<std::string, std::string>* env) {
  if (p.kits.empty()) return std::optional<kits::KitPlan>{};
  auto catalog = kits::KitCatalog::standard_for(p.workspace ? std::filesystem::path(p.workspace->path) : std::filesystem::path(), env);
  auto plan = kits::resolve_kits(catalog, p.kits);
  if (!plan) return with_field(plan.error(), "kits");
  if (auto supported = core::check_kit_plan_supported(*plan); !supported) return with_field(supported.error(), "kits");
  return std::optional<kits::KitPlan>(std::move(*plan));
}

// The sandbox/create answer; `services` are the kits' services when kits were given.
void answer_created(const Reply& reply, rpc::WorkDoneProgress& progress, const core::CreateResult& r, json services) {
  progress.end("ready");
  const auto& t = r.timings;
  json result{{"sandboxId", r.sandbox_id},
              {"accel", vm::accel_name(r.accel)},
              {"state", "ready"},
              {"limits", limits_json(r.limits)},
              {"timings", {{"totalMs", t.total_ms}, {"templateMs", t.template_ms}, {"restoreMs", t.restore_ms}}},
              {"templateSource", core::template_source_name(r.template_source)}};
  if (r.audit_log) result["network"] = json{{"auditLog", r.audit_log->string()}};
  if (r.workspace) {
    result["workspace"] = workspace_summary_json(*r.workspace);
    result["timings"]["snapshotMs"] = t.snapshot_ms;
    result["timings"]["importMs"] = t.import_ms;
  }
  if (!services.is_null()) result["kits"] = json{{"services", std::move(services)}};
  reply.result(std::move(result));
}

json process_info_json(const core::ProcessInfo& info) {
  protocol::ProcessInfoWire wire{info.process_id, info.sandbox_id, info.argv, info.cwd, info.pty, std::string(core::origin_name(info.origin)),
                                 info.name, info.started_unix_ms, !info.exit.has_value(), std::nullopt, std::nullopt, ""};
  if (info.exit) {
    wire.exit_code = info.exit->exit_code;
    wire.signal = info.exit->signal;
    wire.reason = core::end_reason_name(info.exit->reason);
  }
  return protocol::process_info_json(wire);
}

json services_json(const std::vector<core::KitServiceStarted>& services) {
  json out = json::array();
  for (const auto& s : services) out.push_back({{"name", s.name}, {"kit", s.kit}, {"processId", s.process_id}});
  return out;
}

}  // namespace

json sandbox_entry_json(const core::SandboxManager& m, const core::SandboxSummary& s) {
  json item{{"sandboxId", s.id}, {"state", core::state_name(s.state)}, {"accel", vm::accel_name(m.accel())},
            {"ageMs", s.age_ms}, {"processes", s.processes}, {"limits", limits_json(s.limits)}};
  if (s.reason != core::StopReason::kNone) item["reason"] = core::reason_name(s.reason);
  if (s.facts.workspace) item["workspace"] = *s.facts.workspace;
  item["kits"] = s.facts.kits;
  if (s.facts.audit_log) item["auditLog"] = *s.facts.audit_log;
  if (!s.facts.template_source.empty()) item["templateSource"] = s.facts.template_source;
  item["label"] = s.facts.label;
  return item;
}

void SandboxMethods::bind(core::SandboxManager& manager, core::ProcessWatch& watch) {
  rpc::Dispatcher& d = connection_.dispatcher();
  core::SandboxManager* m = &manager;
  core::ProcessWatch* w = &watch;
  rpc::Connection* conn = &connection_;
  manager_ = m;
  connection_.on_written([this] { resume_paused(); });
  std::shared_ptr<SandboxOwnership> own = ownership_;

  d.on_request("sandbox/create", [m, w, conn, own](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_sandbox_create(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto plan = read_kits(p, own && own->client_env ? own->client_env.get() : nullptr);
    if (!plan) return reply.error(to_rpc_error(plan.error()));
    auto network = read_network_request(params);
    if (!network) return reply.error(to_rpc_error(network.error()));
    core::CreateRequest request{to_request(p.resources), std::move(p.env), std::nullopt, std::move(*network)};
    if (p.workspace) request.workspace = to_workspace_request(*p.workspace);
    request.kits = p.kits;
    request.label = p.label;
    if (*plan) {
      if (auto applied = core::apply_kit_plan(**plan, request); !applied) return reply.error(to_rpc_error(applied.error()));
    }
    core::finish_network(request);
    if (own && own->client_env && request.network) {
      for (auto& secret : request.network->secrets)
        if (secret.from.kind == egress::SecretSource::Kind::kEnv) secret.from.environment = own->client_env;
    }
    request.caller_announces = true;  // after the kits' setup, right before the answer
    auto progress = std::make_shared<rpc::WorkDoneProgress>(*conn, params);
    progress->begin("Starting sandbox", 0, /*cancellable=*/true);  // a cancelled create is destroyed, never handed out
    m->create(std::move(request),
              [progress](const std::string& message, int percent) { progress->report(message, percent); },
              [reply, progress, m, w, conn, own, plan = std::move(*plan)](Result<core::CreateResult> r) mutable {
                // With a shared server the connection may have ended meanwhile: then nothing of
                // it may be touched (progress, conn), and nobody will ever get this sandbox's id.
                if (own && own->claim && !own->connected()) {
                  if (r) m->destroy(r->sandbox_id, [](Result<void>) {});
                  return;
                }
                // A cancelled create is destroyed before this connection claims it: a claimed
                // sandbox would be kept for a later window (detached) and keep the server up.
                if (r && reply.cancelled()) {
                  progress->end("cancelled");
                  m->destroy(r->sandbox_id, [](Result<void>) {});  // nobody will use it
                  return;
                }
                if (own && own->claim && !(r ? own->claim(r->sandbox_id) : own->connected())) {
                  if (r) m->destroy(r->sandbox_id, [](Result<void>) {});
                  return;
                }
                if (!r) {
                  progress->end("failed");
                  return reply.error(to_rpc_error(r.error()));
                }
                if (!plan) {
                  m->announce(r->sandbox_id);
                  return answer_created(reply, *progress, *r, nullptr);
                }
                core::KitSetupHooks hooks;
                hooks.step = [progress](const std::string& message) { progress->report(message, 95); };
                bool has_workspace = r->workspace.has_value();
                std::string id = r->sandbox_id;
                // The kits' services are heard of (process/started, their output) only after the answer that names them.
                w->hold(id);
                core::KitSetup::run(conn->loop(), *m, *w, id, std::move(*plan), has_workspace, std::move(hooks),
                                    [reply, progress, m, w, id, own, created = std::move(*r)](Result<core::KitSetupReport> report) {
                                      if (!report) {
                                        progress->end("failed");
                                        w->drop(id);
                                        m->destroy(id, [](Result<void>) {});
                                        return reply.error(to_rpc_error(report.error()));
                                      }
                                      if (reply.cancelled()) {  // cancelled during the kits' setup
                                        progress->end("cancelled");
                                        m->destroy(id, [](Result<void>) {});
                                        return;
                                      }
                                      m->announce(id);
                                      if (own && own->started)
                                        for (const auto& service : report->services) own->started(id, service.process_id);
                                      answer_created(reply, *progress, created, services_json(report->services));
                                      w->release(id);
                                    });
              });
  });

  d.on_request("sandbox/list", [m, own](const json& params, Reply reply) {
    ParamReader reader(params);
    reader.reject_unknown();  // it takes none (workDoneToken aside)
    if (!reader.ok()) return reply.error(reader.error());
    json list = json::array();
    for (const auto& s : m->list()) {
      json item = sandbox_entry_json(*m, s);
      if (own && own->listed && !own->listed(s.id, item)) continue;
      list.push_back(std::move(item));
    }
    reply.result(json{{"sandboxes", std::move(list)}});
  });

  d.on_request("sandbox/setLabel", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_sandbox_set_label(reader);
    if (!reader.ok()) return reply.error(reader.error());
    answer_void(reply)(m->set_label(p.sandbox_id, std::move(p.label)));
  });

  d.on_request("process/list", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_sandbox_id(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto processes = m->processes(p.sandbox_id);
    if (!processes) return reply.error(to_rpc_error(processes.error()));
    json list = json::array();
    for (const auto& info : *processes) list.push_back(process_info_json(info));
    reply.result(json{{"sandboxId", p.sandbox_id}, {"processes", std::move(list)}});
  });

  d.on_request("sandbox/destroy", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_sandbox_id(reader);
    if (!reader.ok()) return reply.error(reader.error());
    m->destroy(p.sandbox_id, answer_void(reply));
  });

  d.on_request("process/start", [m, own](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_process_start(reader);
    if (!reader.ok()) return reply.error(reader.error());
    core::ProcessSpec spec{std::move(p.argv), std::move(p.cwd), std::move(p.env), std::nullopt};
    if (p.pty) spec.pty = std::make_pair(p.pty->cols, p.pty->rows);
    spec.root = p.user == "root";
    m->start_process(p.sandbox_id, std::move(spec), [reply, own, sandbox_id = p.sandbox_id](Result<std::string> id) {
      if (!id) return reply.error(to_rpc_error(id.error()));
      if (own && own->started) own->started(sandbox_id, *id);
      reply.result(json{{"processId", *id}});
    });
  });

  d.on_request("process/write", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_process_write(reader);
    if (!reader.ok()) return reply.error(reader.error());
    answer_void(reply)(m->write_stdin(p.process_id, p.data));
  });

  d.on_request("process/closeStdin", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_process_id(reader);
    if (!reader.ok()) return reply.error(reader.error());
    answer_void(reply)(m->close_stdin(p.process_id));
  });

  d.on_request("process/resize", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_process_resize(reader);
    if (!reader.ok()) return reply.error(reader.error());
    m->resize(p.process_id, p.size.cols, p.size.rows, answer_void(reply));
  });

  d.on_request("process/signal", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_process_signal(reader);
    if (!reader.ok()) return reply.error(reader.error());
    m->signal(p.process_id, p.signal, answer_void(reply));
  });
}

void SandboxMethods::network_event(const std::string& sandbox_id, const egress::AuditRecord& record) {
  send_network_event(connection_, sandbox_id, record);
}

void SandboxMethods::approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) {
  ask_editor_to_approve(connection_, client_can_approve_ && client_can_approve_(), sandbox_id, question, std::move(reply));
}

void SandboxMethods::state_changed(const std::string& id, core::SandboxState state, core::StopReason reason, const std::string& message) {
  connection_.notify("sandbox/stateChanged", protocol::state_changed_json(id, std::string(core::state_name(state)),
                                                                           std::string(core::reason_name(reason)), message));
}

void SandboxMethods::limit_reached(const std::string& sandbox_id, const core::LimitEvent& event) {
  json params{{"sandboxId", sandbox_id}, {"limit", core::limit_name(event.limit)}, {"message", event.message}};
  if (event.process_id) params["processId"] = *event.process_id;
  if (event.value) params["value"] = *event.value;
  connection_.notify("sandbox/limitReached", params);
}

void SandboxMethods::guest_misbehaved(const std::string& sandbox_id, const core::MisbehaviourEvent& event) {
  json entries = json::array();
  for (const auto& e : event.entries) entries.push_back({{"path", e.path}, {"reason", e.reason}});
  connection_.notify("sandbox/misbehaved",
                     json{{"sandboxId", sandbox_id}, {"source", event.source}, {"count", event.count}, {"entries", entries}, {"message", event.message}});
}

void SandboxMethods::add_sandbox_id(json& params, const std::string& process_id) const {
  if (!manager_) return;
  if (auto sandbox = manager_->sandbox_of(process_id)) params["sandboxId"] = *sandbox;
}

void SandboxMethods::process_output(const std::string& process_id, core::OutputStream stream, const core::OutputChunk& chunk) {
  json params = protocol::process_output_json(process_id, std::string(core::stream_name(stream)), chunk.data, chunk.base64);
  add_sandbox_id(params, process_id);
  connection_.notify("process/output", params);
  flow_control(process_id);
}

void SandboxMethods::flow_control(const std::string& process_id) {
  if (!manager_ || connection_.queued_bytes() <= kOutputHighMark || paused_.count(process_id)) return;
  paused_.insert(process_id);
  manager_->pause_output(process_id, true);
}

void SandboxMethods::resume_paused() {
  if (paused_.empty() || !manager_ || connection_.queued_bytes() > kOutputLowMark) return;
  auto paused = std::move(paused_);
  paused_.clear();
  // Each resumed process delivers what the channel held at once (and may be paused again).
  for (const auto& process_id : paused) manager_->pause_output(process_id, false);
}

void SandboxMethods::process_exited(const std::string& process_id, const core::ProcessExit& exit) {
  json params = protocol::process_exited_json(process_id, exit.exit_code, exit.signal);
  if (exit.reason != core::ProcessEndReason::kNone) params["reason"] = core::end_reason_name(exit.reason);
  add_sandbox_id(params, process_id);
  connection_.notify("process/exited", params);
  paused_.erase(process_id);
}

void SandboxMethods::process_started(const core::ProcessInfo& info) {
  // The editor knows its own processes from process/start's answer, and a kit's setup steps are lockroom's.
  if (info.origin == core::ProcessOrigin::kClient || info.origin == core::ProcessOrigin::kKitSetup) return;
  connection_.notify("process/started", process_info_json(info));
}

void SandboxMethods::workspace_changed(const std::string& sandbox_id, std::uint64_t version) {
  connection_.notify("changes/changed", json{{"sandboxId", sandbox_id}, {"version", version}});
}

void SandboxMethods::network_policy_changed(const std::string& sandbox_id, const egress::Policy& policy, core::PolicyChangeCause cause) {
  send_policy_changed(connection_, sandbox_id, policy, std::string(core::policy_cause_name(cause)));
}

}  // namespace lockroom::api
