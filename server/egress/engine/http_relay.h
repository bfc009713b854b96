// HttpRelay: HTTP/1.1 requests from the guest, one after another on one connection, each
// decided, rewritten, relayed and audited on its own.
//
// Two modes. As a forward proxy (no tunnel): absolute-form requests, each gated by the policy
// (and the approval hook), sent to an upstream opened for its host and port (kept for the next
// request to the same place, replaced for another; `https://` URLs get TLS upstream); CONNECT is
// handed to the session, which turns the connection into a Tunnel. Inside an inspected tunnel:
// origin-form requests to the tunnel's host, already decided for the tunnel, sent over a
// verified TLS connection upstream (the tunnel's TCP connection first, new ones after).
//
// Per request: secrets are put into the head (inject_secrets) and a sentinel headed for a host
// outside its secret's scope blocks the request (403, audited "block" as exfiltration) — in the
// head or in the body (SentinelScanner over the de-chunked body). A body that could carry a
// sentinel astray (the sandbox has a secret not scoped to this host) is *screened*: read whole
// and scanned before anything of the request — head included — goes upstream, so a blocked
// request is never seen starting by the other host; such bodies are bounded (kMaxScreenedBody,
// 413 past it). Other bodies are relayed as they come; the response head is re-serialised without
// hop-by-hop headers and its body relayed as it came. Backpressure both ways: reading one side
// pauses while the other side's buffer is above its mark. The guest's next request is read only
// after the response ended (a pipelined request waits in a bounded buffer).
// Time limits (ProxyOptions): a request head must arrive whole within request_head_timeout of
// the connection (or of its first byte, on a kept-alive connection; 408 when part of it came,
// else the connection is just closed); a kept-alive connection with no new request for
// idle_timeout is closed; a request whose exchange moves no byte either way for idle_timeout is
// ended (504 before the response head, a reset after it) and audited. Each upstream holds one
// of the sandbox's UpstreamSlots; with none left the request gets a 503.
// Each request's records carry its number on the connection (`request`); an exchange that moves
// bytes reports "progress" at most once per progress_interval. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/egress/engine/deadline.h"
#include "server/egress/engine/proxy_core.h"
#include "server/egress/engine/sides.h"
#include "server/egress/policy/audit.h"
#include "server/egress/policy/http_head.h"
#include "server/egress/policy/sentinel.h"

namespace lockroom::egress {

class Session;

class HttpRelay {
 public:
  struct InsideTunnel {
    Host host;
    std::uint16_t port = 0;
    std::string sni;
    GateResult decision;                                   // the tunnel's
    std::unique_ptr<tls::UpstreamConnection> connected;    // used by the first request
    UpstreamSlot slot;                                     // counts `connected`
  };

  HttpRelay(Session& session, std::optional<InsideTunnel> tunnel);
  ~HttpRelay();
  // Starts reading the guest's requests; `received` are bytes that already arrived.
  void start(std::string received);
  // Stops: closes the upstream and ignores everything after.
  void stop();
  // The network was switched off: an exchange under way is audited with `reason`.
  void cut(const std::string& reason);

 private:
  enum class Phase { kHead, kGate, kScreen, kConnecting, kExchange, kDone };

  void process();
  void begin_request();
  void gated(const GateResult& decision);
  void screen_body();       // kScreen: holds and scans the body; connects once it is whole and clean
  void connect_upstream();  // after the gate (and the screen): reuse or open the upstream, then send
  void connected(Result<std::unique_ptr<tls::UpstreamConnection>> result);
  void use_upstream(std::unique_ptr<tls::UpstreamConnection> connection);
  void send_head();
  void pump_request_body();
  void on_upstream_data(std::string_view bytes);
  void on_upstream_end();
  void on_upstream_error(const std::string& why);
  void on_client_end();
  void response_complete();
  void refuse(int status, const std::string& text, const std::string& decision, const std::string& rule,
              const std::string& reason);
  void audit(const std::string& decision, const std::string& rule, const std::string& reason);
  void maybe_progress();
  void drop_upstream();
  void await_head();      // a request's head is due: the head timeout runs
  void await_next();      // between kept-alive requests: the idle timeout runs
  void head_timed_out();
  void exchange_idle();
  bool write_client(std::string_view bytes);
  RequestHeadParser new_request_parser() const;
  std::string sentinel_outside_scope(const std::vector<SentinelMatch>& matches) const;
  std::string screen_limit_text(const std::string& where) const;

  Session& session_;
  ProxyCore& core_;
  std::optional<InsideTunnel> tunnel_;
  Phase phase_ = Phase::kHead;
  std::string in_;  // guest bytes not used yet
  RequestHeadParser request_;
  std::optional<ResponseHeadParser> response_;
  RequestHead head_;
  std::optional<SentinelScanner> body_scanner_;
  std::string screened_;        // a screened body, whole, waiting for the upstream
  bool screened_done_ = false;  // the current request's body was screened: send screened_ after the head
  std::vector<std::string> sentinels_;
  std::unique_ptr<Side> upstream_;
  std::string upstream_key_;
  std::unique_ptr<tls::UpstreamConnect> connecting_;
  UpstreamSlot slot_;  // for upstream_ or connecting_
  Deadline deadline_;
  bool between_requests_ = false;  // kHead on a kept-alive connection before any byte of the next request
  std::size_t head_bytes_ = 0;     // bytes of the current request head received so far
  AuditRecord record_;
  std::chrono::steady_clock::time_point started_;
  std::uint64_t requests_ = 0;  // heads read on this connection
  bool request_done_ = false;
  bool response_head_done_ = false;
  bool upstream_reusable_ = false;
  bool client_ended_ = false;
  bool close_after_ = false;
  bool stopped_ = false;
  ProgressClock progress_;
};

}  // namespace lockroom::egress
