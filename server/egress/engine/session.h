// Session: one guest connection to the proxy, from accept to its last byte.
//
// A session owns the guest's side (a ClientSide, wrapped in a TlsSide once the proxy terminates
// TLS) and whichever workers run on it: an HttpRelay for forward-proxy requests (http_relay.h),
// a Tunnel after CONNECT or for a SOCKS connection (tunnel.h), and an HttpRelay again inside an
// inspected tunnel. end() stops everything at once; the ProxyCore destroys the session on a later
// loop turn, so a worker may end its session from inside any callback. The session id is the
// connectionId of every record of the connection. Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/egress/engine/proxy.h"
#include "server/egress/engine/sides.h"
#include "server/egress/policy/http_head.h"

namespace lockroom::egress {

class ProxyCore;
class HttpRelay;
class Tunnel;

class Session {
 public:
  Session(ProxyCore& core, std::uint64_t id, std::unique_ptr<ClientStream> stream, ConnectionOrigin origin = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start_http();
  void start_socks(Host host, std::uint16_t port, SocksVerdict verdict);
  // From the forward relay: the request was CONNECT; `early` are bytes the client sent after it.
  void start_connect(const RequestHead& head, std::string early);

  // The guest side, plaintext. After wrap_client_in_tls it is the TLS-terminated side.
  Side& client() { return *client_; }
  TlsSide& wrap_client_in_tls(std::unique_ptr<tls::TlsStream> tls);
  // An HttpRelay that reads requests inside an inspected tunnel (made by the Tunnel).
  HttpRelay& add_relay(std::unique_ptr<HttpRelay> relay);

  // Ends the session: with an empty reason the guest's side is closed in order (what was written
  // still arrives); otherwise the connection is reset. Every upstream is closed. Idempotent.
  void end(const std::string& reset_reason = {});
  bool ended() const { return ended_; }
  // The network was switched off: what is relaying is audited with `reason`, then end(reason).
  void cut(const std::string& reason);

  ProxyCore& core() { return core_; }
  std::uint64_t id() const { return id_; }
  const ConnectionOrigin& origin() const { return origin_; }
  // The record's connection fields: connection_id (this session) and the guest process.
  void stamp(AuditRecord& record) const;
  // Bytes held toward both sides right now, for the statistics.
  void note_buffered(std::size_t upstream_bytes);

 private:
  ProxyCore& core_;
  std::uint64_t id_;
  ConnectionOrigin origin_;
  std::unique_ptr<Side> client_;
  ClientSide* raw_client_ = nullptr;  // the innermost side, for reset()
  std::vector<std::unique_ptr<HttpRelay>> relays_;
  std::unique_ptr<Tunnel> tunnel_;
  bool ended_ = false;
};

}  // namespace lockroom::egress
