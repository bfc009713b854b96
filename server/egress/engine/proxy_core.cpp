// ProxyCore; see proxy_core.h.
#include "server/egress/engine/proxy_core.h"

#include <netinet/in.h>

#include <spdlog/spdlog.h>

#include "server/common/uv_handle.h"
#include "server/egress/engine/session.h"

namespace lockroom::egress {

IpAddress ip_address_of(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return IpAddress::v4(ntohl(v4.sin_addr.s_addr));
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
  std::array<std::uint8_t, 16> bytes{};
  std::copy(std::begin(v6.sin6_addr.s6_addr), std::end(v6.sin6_addr.s6_addr), bytes.begin());
  return IpAddress::v6(bytes);
}

Result<void> ProxyCore::init() {
  auto ca = tls::SandboxCa::create(options_.sandbox_id);
  if (!ca) return ca.error();
  ca_pem_ = ca->certificate_pem();
  auto leaves = tls::LeafCerts::create(*ca);
  if (!leaves) return leaves.error();
  ca_.emplace(std::move(ca.value()));
  auto server = tls::TlsServerContext::create(std::shared_ptr<tls::LeafCerts>(std::move(leaves.value())));
  if (!server) return server.error();
  server_tls_ = std::move(server.value());
  if (options_.upstream_tls_context) {
    client_tls_ = options_.upstream_tls_context;
  } else {
    auto client = tls::TlsClientContext::create(options_.upstream_tls);
    if (!client) return client.error();
    client_tls_ = std::move(client.value());
  }
  if (options_.audit_log) {
    auto log = AuditLog::open(*options_.audit_log);
    if (!log) return log.error();
    audit_log_.emplace(std::move(log.value()));
    for (const auto& [name, value] : options_.secret_values) redact_.push_back(value);
    audit_log_->set_redacted_values(redact_);
  }
  reaper_ = new_handle<uv_timer_t>(this);
  if (int rc = uv_timer_init(loop_, reaper_); rc < 0) {
    delete_unopened_handle(reaper_);
    reaper_ = nullptr;
    return make_error(ErrorCode::kInternal, std::string("cannot make the proxy's timer: ") + uv_strerror(rc));
  }
  return {};
}

ProxyCore::~ProxyCore() {
  closed_ = true;
  std::vector<std::uint64_t> open;
  for (const auto& [id, session] : sessions_) open.push_back(id);
  for (std::uint64_t id : open)
    if (auto it = sessions_.find(id); it != sessions_.end()) it->second->end("the sandbox's network proxy went away");
  finished_.clear();
  sessions_.clear();
  disposed_.clear();
  close_handle(reaper_);
}

Session& ProxyCore::add_session(std::unique_ptr<Session> session) {
  std::uint64_t id = session->id();
  auto& slot = sessions_[id];
  slot = std::move(session);
  return *slot;
}

bool ProxyCore::session_open(std::uint64_t id) const {
  auto it = sessions_.find(id);
  return it != sessions_.end() && !it->second->ended();
}

void ProxyCore::finish(std::uint64_t session_id) {
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return;
  finished_.push_back(std::move(it->second));
  sessions_.erase(it);
  schedule_reap();
}

void ProxyCore::dispose_erased(std::shared_ptr<void> object) {
  disposed_.push_back(std::move(object));
  schedule_reap();
}

void ProxyCore::schedule_reap() {
  if (reaper_ && !closed_ && !uv_is_active(reinterpret_cast<uv_handle_t*>(reaper_)))
    uv_timer_start(reaper_, [](uv_timer_t* timer) {
      if (auto* self = static_cast<ProxyCore*>(timer->data)) self->reap();
    }, 0, 0);
}

void ProxyCore::reap() {
  // Sessions first: their parts may still point at what was disposed.
  auto finished = std::move(finished_);
  finished.clear();
  auto disposed = std::move(disposed_);
  disposed.clear();
}

void ProxyCore::gate(std::uint64_t session_id, const Target& target, ApprovalQuestion question,
                     std::function<void(GateResult)> then) {
  if (off_)
    return then(GateResult{false, "network off", "the sandbox's network is switched off (network/policy false)", {}, {}, {}});
  Decision decision = decide(options_.policy, target);
  if (decision.verdict != Verdict::kAsk)
    return then(GateResult{decision.verdict == Verdict::kAllow, decision.rule, decision.reason, {}, {}, {}});
  if (!options_.approve) {
    auto not_asked = ApprovalOutcome::not_asked(NoAnswerReason::kNotDeclared);
    return then(GateResult{false, decision.rule, decision.reason + "; " + approval_outcome_text(not_asked),
                           approval_answer_wire(not_asked.answer), no_answer_reason_wire(not_asked.why), {}});
  }
  std::string key = target.host.url_host() + ":" + std::to_string(target.port);
  Waiter waiter{session_id, target, decision, std::move(then)};
  if (auto pending = pending_.find(key); pending != pending_.end()) {
    pending->second.waiters.push_back(std::move(waiter));  // one prompt: this connection waits for the same answer
    return;
  }
  std::string approval_id = options_.sandbox_id + "-a" + std::to_string(++last_approval_id_);
  pending_[key] = PendingApproval{approval_id, {}};
  pending_[key].waiters.push_back(std::move(waiter));
  question.sandbox = options_.sandbox_id;
  question.host = target.host.name;
  question.port = target.port;
  question.scheme = scheme_name(target.scheme);
  question.reason = decision.reason;
  question.approval_id = approval_id;
  question.key = key;
  question.target = target;
  auto replied = std::make_shared<bool>(false);
  std::weak_ptr<ProxyCore> weak = weak_from_this();
  options_.approve(question, [weak, key, approval_id, replied](ApprovalOutcome outcome) {
    if (*replied) return;
    *replied = true;
    auto core = weak.lock();
    if (!core || core->closed_) return;
    core->answered(key, approval_id, outcome);
  });
}

void ProxyCore::answered(const std::string& key, const std::string& approval_id, const ApprovalOutcome& answer) {
  auto pending = pending_.find(key);
  if (pending == pending_.end() || pending->second.id != approval_id) return;
  std::vector<Waiter> waiters = std::move(pending->second.waiters);
  pending_.erase(pending);
  if (waiters.empty()) return;
  ApprovalOutcome outcome = answer;
  std::string grant_text;
  if (outcome.answer == ApprovalAnswer::kAllowSandbox) {
    // The grant is checked against what was asked first (the same host and port for every waiter).
    Result<Rule> rule = grant_rule(waiters.front().target, outcome.scope.value_or(GrantScope{}));
    if (!rule) {
      outcome = ApprovalOutcome::no_answer(NoAnswerReason::kInvalidScope, rule.error().message);
    } else {
      std::string ports = rule->ports.empty() ? "any port" : rule->ports.size() == 1 && rule->ports[0].first == rule->ports[0].last ? "port " : "ports ";
      for (std::size_t i = 0; i < rule->ports.size(); ++i) {
        const PortRange& range = rule->ports[i];
        ports += (i ? "," : "") + std::to_string(range.first) + (range.first == range.last ? "" : "-" + std::to_string(range.last));
      }
      grant_text = " (" + rule->host.text() + ", " + ports + ")";
      options_.policy.rules.insert(options_.policy.rules.begin(), std::move(*rule));
    }
  }
  for (const Waiter& waiter : waiters) {
    if (!session_open(waiter.session_id)) continue;  // the guest went away while the user was asked
    waiter.then(gate_result(waiter, outcome, approval_id, grant_text));
    if (closed_) return;
  }
}

GateResult ProxyCore::gate_result(const Waiter& waiter, const ApprovalOutcome& outcome, const std::string& approval_id,
                                  const std::string& grant_text) const {
  std::string approval = approval_answer_wire(outcome.answer);
  std::string why = no_answer_reason_wire(outcome.why);
  if (off_) return GateResult{false, "network off", "the sandbox's network was switched off while the user was asked", approval, why, approval_id};
  if (outcome.answer == ApprovalAnswer::kNotAsked || outcome.answer == ApprovalAnswer::kNoAnswer) {
    // Nobody decided: the policy's own rule stands, and the record says why nobody answered.
    return GateResult{false, waiter.decision.rule, waiter.decision.reason + "; " + approval_outcome_text(outcome), approval, why,
                      approval_id};
  }
  return GateResult{outcome.allows(), "user", approval_outcome_text(outcome) + grant_text, approval, why, approval_id};
}

void ProxyCore::switch_off() {
  off_ = true;
  std::vector<std::uint64_t> open;
  for (const auto& [id, session] : sessions_) open.push_back(id);
  for (std::uint64_t id : open)
    if (auto it = sessions_.find(id); it != sessions_.end()) it->second->cut("closed: the sandbox's network was switched off");
}

bool ProxyCore::must_terminate(const Host& host) const {
  if (should_inspect(options_.policy, host)) return true;
  for (const Secret& secret : options_.secrets)
    if (secret.scoped_to(host)) return true;
  return false;
}

std::unique_ptr<tls::UpstreamConnect> ProxyCore::connect(const Target& target, tls::UpstreamConnect::Done done) {
  // The check reads the policy when each address comes up, so it is the policy of that moment.
  auto check = [this, port = target.port, scheme = target.scheme](const sockaddr_storage& address) -> Result<void> {
    AddressCheck checked = check_address(options_.policy, ip_address_of(address), port, scheme);
    if (checked.allowed) return {};
    return make_error(ErrorCode::kInvalidInput, checked.reason);
  };
  tls::ConnectOptions options;
  options.timeout = options_.connect_timeout;
  return tls::UpstreamConnect::start(loop_, tls::UpstreamTarget{target.host.name, target.port, {}}, std::move(check),
                                     std::move(done), options);
}

UpstreamSlot ProxyCore::take_upstream_slot() {
  if (upstream_connections_ >= options_.max_upstream_connections) return {};
  return UpstreamSlot(&upstream_connections_);
}

std::string ProxyCore::upstream_limit_text() const {
  return "lockroom: this sandbox already has " + std::to_string(options_.max_upstream_connections) +
         " upstream connections open (its limit); close some (or reuse them with keep-alive) and retry";
}

void ProxyCore::emit(const AuditRecord& record) {
  AuditRecord stamped = record;
  stamped.sandbox = options_.sandbox_id;
  stamped.phase.clear();
  ++stats_.decisions;
  if (audit_log_) {
    if (Result<void> appended = audit_log_->append(stamped); !appended)
      spdlog::warn("egress audit log {}: {}", audit_log_->path().string(), appended.error().message);
  }
  if (options_.on_event) {
    stamped.phase = "close";
    options_.on_event(stamped);
  }
}

void ProxyCore::emit_phase(const AuditRecord& record, const char* phase) {
  if (!options_.on_event) return;
  AuditRecord stamped = record;
  stamped.sandbox = options_.sandbox_id;
  stamped.phase = phase;
  options_.on_event(stamped);
}

std::string ProxyCore::guest_safe(std::string text) const {
  for (const auto& [name, value] : options_.secret_values) {
    if (value.empty()) continue;
    for (auto at = text.find(value); at != std::string::npos; at = text.find(value, at + 8)) text.replace(at, value.size(), "[secret]");
  }
  return text;
}

ProxyStats ProxyCore::stats() const {
  ProxyStats stats = stats_;
  stats.sessions = sessions_.size();
  stats.upstream_connections = upstream_connections_;
  return stats;
}

void ProxyCore::close(std::function<void()> done) {
  if (closed_) return;
  // libuv runs close callbacks newest first: closing the timer before the sessions' handles makes
  // its callback (and `done`) come after theirs.
  if (reaper_) {
    uv_timer_stop(reaper_);
    auto* base = reinterpret_cast<uv_handle_t*>(reaper_);
    base->data = new std::function<void()>(std::move(done));
    uv_close(base, [](uv_handle_t* handle) {
      std::unique_ptr<std::function<void()>> then(static_cast<std::function<void()>*>(handle->data));
      delete reinterpret_cast<uv_any_handle*>(handle);
      if (then && *then) (*then)();
    });
    reaper_ = nullptr;
  }
  std::vector<std::uint64_t> open;
  for (const auto& [id, session] : sessions_) open.push_back(id);
  for (std::uint64_t id : open)
    if (auto it = sessions_.find(id); it != sessions_.end()) it->second->end("the sandbox's network proxy is closing");
  closed_ = true;
  finished_.clear();
  disposed_.clear();
}

}  // namespace lockroom::egress
