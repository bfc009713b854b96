// ProxyCore: what every session of one Proxy shares (proxy.h is the public face).
//
// It holds the policy, the secrets, the sandbox CA and TLS contexts, the audit log and the open
// sessions, and offers the sessions four services:
//   gate()     decide a target; `ask` goes to the approval hook; the continuation runs later
//              (only if the session is still open)
//   connect()  resolve and connect with every resolved address checked against the policy
//   gate() also joins concurrent asks for the same host and port into one approval (the
//              approve hook is called once; every waiting session gets the answer)
//   emit()     write one audit record and pass it to on_event (phase "close")
//   emit_phase()  an "open" or "progress" event: on_event only, not the audit log
//   finish()   a session is done: it is destroyed on a later loop turn, never inside a callback
//   dispose()  the same for a part a session no longer needs (an upstream it replaced)
//   take_upstream_slot()  one of the sandbox's max_upstream_connections, held (an UpstreamSlot)
//              for as long as an upstream connection or attempt exists; empty when all are taken
// Loop thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <uv.h>

#include "server/egress/engine/proxy.h"
#include "server/egress/tls/leaf_certs.h"
#include "server/egress/tls/sandbox_ca.h"
#include "server/egress/tls/upstream.h"

namespace lockroom::egress {

class Session;

struct GateResult {
  bool allowed = false;
  std::string rule;    // the rule that decided, "default", or "user" after an approval
  std::string reason;  // for the audit record
  // When the approval hook was involved: approval_answer_wire() and no_answer_reason_wire().
  std::string approval;
  std::string approval_reason;
  std::string approval_id;  // the approval that decided, if one did
};

// When a connection last reported progress; due() says whether it is time again (and restarts).
class ProgressClock {
 public:
  void start(uv_loop_t* loop) { last_ = uv_now(loop); }
  bool due(uv_loop_t* loop, std::chrono::milliseconds interval) {
    if (interval.count() <= 0) return false;
    std::uint64_t now = uv_now(loop);
    if (now - last_ < static_cast<std::uint64_t>(interval.count())) return false;
    last_ = now;
    return true;
  }

 private:
  std::uint64_t last_ = 0;
};

// A counted place among the sandbox's upstream connections; released when destroyed (or
// release()d). Movable, so it travels with the connection it stands for.
class UpstreamSlot {
 public:
  UpstreamSlot() = default;
  explicit UpstreamSlot(std::size_t* count) : count_(count) { ++*count_; }
  UpstreamSlot(UpstreamSlot&& other) noexcept : count_(std::exchange(other.count_, nullptr)) {}
  UpstreamSlot& operator=(UpstreamSlot&& other) noexcept {
    if (this != &other) {
      release();
      count_ = std::exchange(other.count_, nullptr);
    }
    return *this;
  }
  ~UpstreamSlot() { release(); }
  void release() {
    if (count_) --*std::exchange(count_, nullptr);
  }
  explicit operator bool() const { return count_ != nullptr; }

 private:
  std::size_t* count_ = nullptr;
};

// An IP address the kernel gave back, in the policy's form.
IpAddress ip_address_of(const sockaddr_storage& address);

class ProxyCore : public std::enable_shared_from_this<ProxyCore> {
 public:
  ProxyCore(uv_loop_t* loop, ProxyOptions options) : loop_(loop), options_(std::move(options)) {}
  ~ProxyCore();
  Result<void> init();

  uv_loop_t* loop() const { return loop_; }
  const ProxyOptions& options() const { return options_; }
  const Policy& policy() const { return options_.policy; }
  void set_policy(Policy policy) {
    options_.policy = std::move(policy);
    off_ = false;
  }
  void switch_off();
  bool switched_off() const { return off_; }
  const std::vector<Secret>& secrets() const { return options_.secrets; }
  const SecretValues& secret_values() const { return options_.secret_values; }
  const std::shared_ptr<tls::TlsServerContext>& server_tls() const { return server_tls_; }
  const std::shared_ptr<tls::TlsClientContext>& client_tls() const { return client_tls_; }
  std::string ca_certificate_pem() const { return ca_pem_; }

  Session& add_session(std::unique_ptr<Session> session);
  void finish(std::uint64_t session_id);
  template <typename T>
  void dispose(std::unique_ptr<T> object) {
    if (object) dispose_erased(std::shared_ptr<void>(std::move(object)));
  }
  std::uint64_t next_session_id() { return ++last_session_id_; }

  // `question` carries host, port, scheme, method and path; the result comes later.
  void gate(std::uint64_t session_id, const Target& target, ApprovalQuestion question,
            std::function<void(GateResult)> then);
  // Whether the tunnel to `host` must be opened up: a secret is scoped to it or it is inspected.
  bool must_terminate(const Host& host) const;
  std::unique_ptr<tls::UpstreamConnect> connect(const Target& target, tls::UpstreamConnect::Done done);
  UpstreamSlot take_upstream_slot();
  // "lockroom: this sandbox already has 256 upstream connections open (its limit) ..."
  std::string upstream_limit_text() const;

  void emit(const AuditRecord& record);
  void emit_phase(const AuditRecord& record, const char* phase);
  // `text` with every secret value replaced by "[secret]": for what the guest is told.
  std::string guest_safe(std::string text) const;
  void note_buffered(std::size_t bytes) { stats_.peak_buffered_bytes = std::max(stats_.peak_buffered_bytes, bytes); }
  ProxyStats stats() const;

  void close(std::function<void()> done);

 private:
  void reap();
  void dispose_erased(std::shared_ptr<void> object);
  void schedule_reap();
  bool session_open(std::uint64_t id) const;
  struct Waiter {
    std::uint64_t session_id;
    Target target;
    Decision decision;
    std::function<void(GateResult)> then;
  };
  struct PendingApproval {
    std::string id;
    std::vector<Waiter> waiters;
  };
  void answered(const std::string& key, const std::string& approval_id, const ApprovalOutcome& outcome);
  GateResult gate_result(const Waiter& waiter, const ApprovalOutcome& outcome, const std::string& approval_id,
                         const std::string& grant_text) const;

  uv_loop_t* loop_;
  ProxyOptions options_;
  std::optional<tls::SandboxCa> ca_;
  std::string ca_pem_;
  std::shared_ptr<tls::TlsServerContext> server_tls_;
  std::shared_ptr<tls::TlsClientContext> client_tls_;
  std::optional<AuditLog> audit_log_;
  std::vector<std::string> redact_;
  std::map<std::uint64_t, std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Session>> finished_;
  std::vector<std::shared_ptr<void>> disposed_;
  uv_timer_t* reaper_ = nullptr;
  std::uint64_t last_session_id_ = 0;
  std::map<std::string, PendingApproval> pending_;  // by key, "host:port"
  std::uint64_t last_approval_id_ = 0;
  bool off_ = false;  // network/policy false
  std::size_t upstream_connections_ = 0;  // counted by the UpstreamSlots alive
  ProxyStats stats_;
  bool closed_ = false;
};

}  // namespace lockroom::egress
