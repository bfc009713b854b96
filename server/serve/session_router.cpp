// SessionRouter; see session_router.h.
#include "server/serve/session_router.h"

#include <spdlog/spdlog.h>

#include "server/common/uv_handle.h"

namespace lockroom::serve {

namespace {

std::string duration_text(std::chrono::milliseconds ms) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(ms).count();
  if (s % 3600 == 0 && s >= 3600) return std::to_string(s / 3600) + " h";
  if (s % 60 == 0 && s >= 60) return std::to_string(s / 60) + " min";
  if (s >= 1) return std::to_string(s) + " s";
  return std::to_string(ms.count()) + " ms";
}

// What a grace timer carries: the sandbox and the detach it was armed for.
struct GraceFired {
  SessionRouter* router;
  std::string sandbox_id;
  std::uint64_t generation;
};

}  // namespace

SessionRouter::SessionRouter(uv_loop_t* loop, RouterHost& host, RouterOptions options)
    : loop_(loop), host_(host), options_(options) {}

SessionRouter::~SessionRouter() {
  *alive_ = false;
  for (auto& [id, d] : detached_) {
    if (!d->timer) continue;
    delete static_cast<GraceFired*>(d->timer->data);
    close_handle(d->timer);
  }
}

void SessionRouter::add_session(SessionId id, core::SandboxEvents& events, std::string label) {
  sessions_[id] = Session{&events, std::move(label)};
  changed();
}

void SessionRouter::remove_session(SessionId id) {
  if (!sessions_.erase(id)) return;
  std::vector<std::string> mine;
  for (const auto& [sandbox, owner] : owner_)
    if (owner == id) mine.push_back(sandbox);
  for (const auto& sandbox : mine) detach(sandbox);
  changed();
}

bool SessionRouter::claim(SessionId id, const std::string& sandbox_id) {
  if (!sessions_.count(id)) return false;
  owner_[sandbox_id] = id;
  return true;
}

void SessionRouter::process_started(const std::string& sandbox_id, const std::string& process_id) {
  processes_[sandbox_id].insert(process_id);
  process_sandbox_[process_id] = sandbox_id;
}

SessionRouter::Relation SessionRouter::relation(SessionId id, const std::string& sandbox_id) const {
  if (auto it = owner_.find(sandbox_id); it != owner_.end()) return it->second == id ? Relation::kMine : Relation::kOther;
  if (detached_.count(sandbox_id)) return Relation::kDetached;
  return Relation::kUnknown;
}

std::optional<std::int64_t> SessionRouter::detached_ms(const std::string& sandbox_id) const {
  auto it = detached_.find(sandbox_id);
  if (it == detached_.end()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - it->second->since).count();
}

void SessionRouter::detach(const std::string& sandbox_id) {
  owner_.erase(sandbox_id);
  auto d = std::make_unique<Detached>();
  d->buffer = ReplayBuffer(options_.replay);
  d->since = std::chrono::steady_clock::now();
  d->generation = next_generation_++;
  detached_[sandbox_id] = std::move(d);
  spdlog::info("sandbox {} detached: its connection ended; kept {} (longer with unapplied changes, up to {})", sandbox_id,
               duration_text(options_.grace), duration_text(options_.changes_grace));
  arm(sandbox_id, options_.grace);
}

void SessionRouter::arm(const std::string& sandbox_id, std::chrono::milliseconds after) {
  Detached* d = detached_of(sandbox_id);
  if (!d) return;
  if (!d->timer) {
    d->timer = new_handle<uv_timer_t>(nullptr);
    uv_timer_init(loop_, d->timer);
  }
  // The sandbox and its generation are looked up again when it fires.
  delete static_cast<GraceFired*>(d->timer->data);
  d->timer->data = new GraceFired{this, sandbox_id, d->generation};
  uv_timer_start(d->timer, [](uv_timer_t* t) {
    std::unique_ptr<GraceFired> fired(static_cast<GraceFired*>(t->data));
    t->data = nullptr;
    if (fired) fired->router->grace_over(fired->sandbox_id, fired->generation);
  }, static_cast<std::uint64_t>(std::max<std::int64_t>(after.count(), 0)), 0);
}

void SessionRouter::grace_over(const std::string& sandbox_id, std::uint64_t generation) {
  Detached* d = detached_of(sandbox_id);
  if (!d || d->generation != generation) return;
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - d->since);
  std::string message = "no editor attached it within " + duration_text(elapsed) + " after its connection ended";
  if (d->checked || options_.changes_grace <= options_.grace) {
    forget(sandbox_id);
    return host_.destroy_detached(sandbox_id, message);
  }
  host_.has_unapplied_changes(sandbox_id, [this, alive = alive_, sandbox_id, generation, message](bool changes) {
    if (!*alive) return;
    Detached* d = detached_of(sandbox_id);
    if (!d || d->generation != generation) return;  // attached (or gone) meanwhile
    if (!changes) {
      forget(sandbox_id);
      return host_.destroy_detached(sandbox_id, message);
    }
    d->checked = true;
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - d->since);
    spdlog::info("sandbox {} holds unapplied changes: kept detached until {} after its connection ended", sandbox_id,
                 duration_text(options_.changes_grace));
    arm(sandbox_id, options_.changes_grace - elapsed);
  });
}

void SessionRouter::forget(const std::string& sandbox_id) {
  auto it = detached_.find(sandbox_id);
  if (it == detached_.end()) return;
  if (it->second->timer) {
    // A pending GraceFired is freed here: a closed timer never fires.
    delete static_cast<GraceFired*>(it->second->timer->data);
    close_handle(it->second->timer);
  }
  detached_.erase(it);
  changed();
}

Result<Attachment> SessionRouter::attach(SessionId id, const std::string& sandbox_id) {
  if (!sessions_.count(id)) return make_error(ErrorCode::kWrongState, "this connection is ending");
  if (auto it = owner_.find(sandbox_id); it != owner_.end()) {
    if (it->second == id) return make_error(ErrorCode::kWrongState, "sandbox " + sandbox_id + " is already attached to this connection");
    return make_error(ErrorCode::kWrongState, "sandbox " + sandbox_id + " is attached to another connection (" +
                                                  sessions_.at(it->second).label +
                                                  "); it can be attached once that connection has ended");
  }
  auto it = detached_.find(sandbox_id);
  if (it == detached_.end())
    return make_error(ErrorCode::kNotFound, "no detached sandbox " + sandbox_id + "; sandbox/list shows the ones you can attach");
  Attachment out;
  Detached& d = *it->second;
  out.detached_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - d.since).count();
  out.stats = d.buffer.stats();
  out.replay = d.buffer.take();
  std::set<std::string> listed;
  for (const auto& process : processes_[sandbox_id]) {
    AttachedProcess p{process, true, 0};
    listed.insert(process);
    out.processes.push_back(p);
  }
  for (const auto& event : out.replay) {
    if (const auto* e = std::get_if<ReplayEvent::Exited>(&event.what)) {
      if (!listed.count(e->process_id)) {
        out.processes.push_back(AttachedProcess{e->process_id, false, 0});
        listed.insert(e->process_id);
      } else {
        for (auto& p : out.processes)
          if (p.process_id == e->process_id) p.running = false;
      }
    }
  }
  for (auto& p : out.processes)
    if (auto dropped = out.stats.dropped_by_process.find(p.process_id); dropped != out.stats.dropped_by_process.end())
      p.dropped_bytes = dropped->second;
  forget(sandbox_id);
  owner_[sandbox_id] = id;
  spdlog::info("sandbox {} attached to {} after {} ms detached ({} events kept, {} bytes of output dropped)", sandbox_id,
               sessions_.at(id).label, out.detached_ms, out.replay.size(), out.stats.dropped_output_bytes);
  return out;
}

void SessionRouter::replay_to(SessionId id, const std::string& sandbox_id, std::list<ReplayEvent> events) {
  auto session = sessions_.find(id);
  if (session == sessions_.end()) return;
  core::SandboxEvents& to = *session->second.events;
  for (auto& event : events) {
    std::visit(
        [&](auto& e) {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, ReplayEvent::Output>) to.process_output(e.process_id, e.stream, e.chunk);
          else if constexpr (std::is_same_v<T, ReplayEvent::Exited>) to.process_exited(e.process_id, e.exit);
          else if constexpr (std::is_same_v<T, ReplayEvent::State>) to.state_changed(sandbox_id, e.state, e.reason, e.message);
          else if constexpr (std::is_same_v<T, core::LimitEvent>) to.limit_reached(sandbox_id, e);
          else if constexpr (std::is_same_v<T, core::MisbehaviourEvent>) to.guest_misbehaved(sandbox_id, e);
          else if constexpr (std::is_same_v<T, ReplayEvent::Network>) to.network_event(sandbox_id, e.record);
        },
        event.what);
  }
}

core::SandboxEvents* SessionRouter::owner_events(const std::string& sandbox_id) {
  auto it = owner_.find(sandbox_id);
  if (it == owner_.end()) return nullptr;
  auto session = sessions_.find(it->second);
  return session == sessions_.end() ? nullptr : session->second.events;
}

SessionRouter::Detached* SessionRouter::detached_of(const std::string& sandbox_id) {
  auto it = detached_.find(sandbox_id);
  return it == detached_.end() ? nullptr : it->second.get();
}

std::optional<std::string> SessionRouter::sandbox_of_process(const std::string& process_id) const {
  if (auto it = process_sandbox_.find(process_id); it != process_sandbox_.end()) return it->second;
  return host_.sandbox_of(process_id);
}

void SessionRouter::state_changed(const std::string& sandbox_id, core::SandboxState state, core::StopReason reason,
                                  const std::string& message) {
  if (auto* to = owner_events(sandbox_id)) to->state_changed(sandbox_id, state, reason, message);
  else if (auto* d = detached_of(sandbox_id)) d->buffer.state(state, reason, message);
  if (!core::is_final(state)) return;
  // Gone: nothing more will come, and it cannot be attached.
  owner_.erase(sandbox_id);
  forget(sandbox_id);
  changed();
}

void SessionRouter::process_output(const std::string& process_id, core::OutputStream stream, const core::OutputChunk& chunk) {
  auto sandbox = sandbox_of_process(process_id);
  if (!sandbox) return;
  if (!process_sandbox_.count(process_id)) process_started(*sandbox, process_id);
  if (auto* to = owner_events(*sandbox)) to->process_output(process_id, stream, chunk);
  else if (auto* d = detached_of(*sandbox)) d->buffer.output(process_id, stream, chunk);
}

void SessionRouter::process_bytes(const std::string& process_id, core::OutputStream stream, std::string_view bytes) {
  auto sandbox = sandbox_of_process(process_id);
  if (!sandbox) return;
  if (auto* to = owner_events(*sandbox)) to->process_bytes(process_id, stream, bytes);
}

void SessionRouter::process_exited(const std::string& process_id, const core::ProcessExit& exit) {
  auto sandbox = sandbox_of_process(process_id);
  process_sandbox_.erase(process_id);
  if (!sandbox) return;
  if (auto it = processes_.find(*sandbox); it != processes_.end()) {
    it->second.erase(process_id);
    if (it->second.empty()) processes_.erase(it);
  }
  if (auto* to = owner_events(*sandbox)) to->process_exited(process_id, exit);
  else if (auto* d = detached_of(*sandbox)) d->buffer.exited(process_id, exit);
}

void SessionRouter::limit_reached(const std::string& sandbox_id, const core::LimitEvent& event) {
  if (auto* to = owner_events(sandbox_id)) to->limit_reached(sandbox_id, event);
  else if (auto* d = detached_of(sandbox_id)) d->buffer.limit(event);
}

void SessionRouter::guest_misbehaved(const std::string& sandbox_id, const core::MisbehaviourEvent& event) {
  if (auto* to = owner_events(sandbox_id)) to->guest_misbehaved(sandbox_id, event);
  else if (auto* d = detached_of(sandbox_id)) d->buffer.misbehaved(event);
}

void SessionRouter::network_event(const std::string& sandbox_id, const egress::AuditRecord& record) {
  if (auto* to = owner_events(sandbox_id)) to->network_event(sandbox_id, record);
  else if (auto* d = detached_of(sandbox_id)) d->buffer.network(record);
}

void SessionRouter::process_started(const core::ProcessInfo& info) {
  if (auto* to = owner_events(info.sandbox_id)) to->process_started(info);
}

void SessionRouter::workspace_changed(const std::string& sandbox_id, std::uint64_t version) {
  if (auto* to = owner_events(sandbox_id)) to->workspace_changed(sandbox_id, version);
}

void SessionRouter::network_policy_changed(const std::string& sandbox_id, const egress::Policy& policy, core::PolicyChangeCause cause) {
  if (auto* to = owner_events(sandbox_id)) to->network_policy_changed(sandbox_id, policy, cause);
}

void SessionRouter::approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) {
  if (auto* to = owner_events(sandbox_id)) return to->approve_network(sandbox_id, question, std::move(reply));
  reply(egress::ApprovalOutcome::not_asked(egress::NoAnswerReason::kNoEditor));
}

}  // namespace lockroom::serve
