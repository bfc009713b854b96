// Session; see session.h.
#include "server/egress/engine/session.h"

#include "server/egress/engine/http_relay.h"
#include "server/egress/engine/proxy_core.h"
#include "server/egress/engine/tunnel.h"

namespace lockroom::egress {

Session::Session(ProxyCore& core, std::uint64_t id, std::unique_ptr<ClientStream> stream, ConnectionOrigin origin)
    : core_(core), id_(id), origin_(std::move(origin)) {
  auto client = std::make_unique<ClientSide>(std::move(stream));
  raw_client_ = client.get();
  client_ = std::move(client);
}

Session::~Session() {
  // Workers first: they hold pointers to the client side.
  tunnel_.reset();
  relays_.clear();
  client_.reset();
}

void Session::start_http() {
  auto& relay = add_relay(std::make_unique<HttpRelay>(*this, std::nullopt));
  relay.start({});
}

void Session::start_socks(Host host, std::uint16_t port, SocksVerdict verdict) {
  tunnel_ = std::make_unique<Tunnel>(*this, std::move(host), port, std::move(verdict), std::string());
  tunnel_->start();
}

void Session::start_connect(const RequestHead& head, std::string early) {
  tunnel_ = std::make_unique<Tunnel>(*this, head.host, head.port, SocksVerdict{}, std::move(early));
  tunnel_->start();
}

TlsSide& Session::wrap_client_in_tls(std::unique_ptr<tls::TlsStream> tls) {
  auto side = std::make_unique<TlsSide>(std::move(tls), std::move(client_));
  TlsSide& result = *side;
  client_ = std::move(side);
  return result;
}

HttpRelay& Session::add_relay(std::unique_ptr<HttpRelay> relay) {
  relays_.push_back(std::move(relay));
  return *relays_.back();
}

void Session::stamp(AuditRecord& record) const {
  record.connection_id = id_;
  record.process = origin_.process;
}

void Session::cut(const std::string& reason) {
  if (ended_) return;
  if (tunnel_) tunnel_->cut(reason);
  for (auto& relay : relays_) relay->cut(reason);
  end(reason);
}

void Session::note_buffered(std::size_t upstream_bytes) { core_.note_buffered(upstream_bytes + client_->buffered()); }

void Session::end(const std::string& reset_reason) {
  if (ended_) return;
  ended_ = true;
  for (auto& relay : relays_) relay->stop();
  if (tunnel_) tunnel_->stop();
  if (reset_reason.empty()) {
    client_->close_write();
    client_->close();
  } else {
    raw_client_->reset(reset_reason);
    client_->close();
  }
  core_.finish(id_);
}

}  // namespace lockroom::egress
