// Tunnel: a CONNECT (from the forward proxy) or a SOCKS connection (the guest did the SOCKS
// handshake) to one host and port.
//
// Steps: decide the target (allowed for https or for tcp; `ask` goes to the approval hook);
// connect with every resolved address checked; answer the guest (`HTTP/1.1 200 Connection
// established`, or the SOCKS verdict) — a refusal before that is a 403/502/504 answer or a
// failed verdict; then read the guest's first bytes:
//   - a TLS ClientHello: its SNI is checked against the policy too (a name other than the target
//     must itself be allowed); then, when the host has a secret or is marked for inspection, the
//     guest's TLS is terminated with the sandbox CA and an HttpRelay reads the requests inside
//     (each audited); otherwise the bytes are relayed as they are (TLS end to end), audited once
//     when the tunnel ends, with bytes each way;
//   - anything else: a plain TCP tunnel, which the policy must allow for scheme tcp.
// A refusal after the tunnel was answered resets the guest's connection (its client sees a
// closed connection or a TLS failure) and is audited with the reason.
// Limits (ProxyOptions): the connection counts against the sandbox's max_upstream_connections
// from the connect on (none left: 503 or a SOCKS general failure); the guest's first bytes are
// due within request_head_timeout of the answer; a relayed tunnel that moves no byte either way
// for idle_timeout is closed and audited.
// Events: when the tunnel starts relaying as is, an "open" event (not audited); while it moves
// bytes, a "progress" event at most once per progress_interval; the audit record at its end.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/egress/engine/deadline.h"
#include "server/egress/engine/proxy_core.h"
#include "server/egress/engine/sides.h"
#include "server/egress/policy/tls_client_hello.h"

namespace lockroom::egress {

class Session;

class Tunnel {
 public:
  // An empty `verdict` means CONNECT (answers are HTTP); `early` are bytes sent after CONNECT.
  Tunnel(Session& session, Host host, std::uint16_t port, SocksVerdict verdict, std::string early);
  ~Tunnel();
  void start();
  void stop();
  // The network was switched off: a tunnel that is relaying is audited with `reason` (the
  // session then ends it).
  void cut(const std::string& reason);

 private:
  void gated(const GateResult& decision);
  void connected(Result<std::unique_ptr<tls::UpstreamConnection>> result);
  void refuse_before_answer(int http_status, int socks_reply, const std::string& text, const std::string& decision,
                            const std::string& rule, const std::string& reason);
  void on_first_bytes(std::string_view bytes);
  void first_bytes_known(const ClientHelloResult& hello);
  void refuse_after_answer(const std::string& reason);
  void relay_as_is();
  void terminate_tls();
  void maybe_finish_relay();
  void audit(const std::string& decision, const std::string& rule, const std::string& reason);
  void maybe_progress();

  Session& session_;
  ProxyCore& core_;
  Host host_;
  std::uint16_t port_;
  SocksVerdict verdict_;
  std::string first_bytes_;
  ClientHelloReader hello_reader_;
  GateResult decision_;
  bool awaiting_gate_ = false;  // the approval hook has the question
  bool asked_user_ = false;  // the decision came from the approval hook: it covers any scheme
  std::unique_ptr<tls::UpstreamConnect> connecting_;
  std::unique_ptr<tls::UpstreamConnection> connection_;  // before the relay starts
  std::unique_ptr<UpstreamSide> upstream_;
  UpstreamSlot slot_;  // for connecting_, connection_ or upstream_
  Deadline deadline_;
  AuditRecord record_;
  std::chrono::steady_clock::time_point started_;
  bool client_done_ = false;
  bool upstream_done_ = false;
  bool stopped_ = false;
  bool relaying_ = false;  // relay_as_is() ran: "open" was sent, the close record is still due
  ProgressClock progress_;
};

}  // namespace lockroom::egress
