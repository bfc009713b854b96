// Proxy; see proxy.h. The work is in ProxyCore, Session, HttpRelay and Tunnel.
#include "server/egress/engine/proxy.h"

#include "server/egress/engine/proxy_answers.h"
#include "server/egress/engine/proxy_core.h"
#include "server/egress/engine/session.h"

namespace lockroom::egress {

Result<std::unique_ptr<Proxy>> Proxy::create(uv_loop_t* loop, ProxyOptions options) {
  for (const Secret& secret : options.secrets)
    if (!options.secret_values.count(secret.name))
      return make_error(ErrorCode::kInvalidInput, "secret " + secret.name + " has no resolved value; resolve the values "
                                                  "(resolve_secret_values) before making the proxy");
  auto positive = [](std::chrono::milliseconds limit) { return limit.count() > 0; };
  if (!positive(options.connect_timeout) || !positive(options.request_head_timeout) || !positive(options.idle_timeout))
    return make_error(ErrorCode::kInvalidInput, "the proxy's connect, request head and idle timeouts must be above 0 ms (got " +
                                                    std::to_string(options.connect_timeout.count()) + ", " +
                                                    std::to_string(options.request_head_timeout.count()) + ", " +
                                                    std::to_string(options.idle_timeout.count()) + ")");
  if (options.max_upstream_connections == 0)
    return make_error(ErrorCode::kInvalidInput, "max_upstream_connections must be at least 1");
  auto core = std::make_shared<ProxyCore>(loop, std::move(options));
  if (Result<void> ready = core->init(); !ready) return ready.error();
  return std::unique_ptr<Proxy>(new Proxy(std::move(core)));
}

Proxy::~Proxy() = default;

void Proxy::accept_http(std::unique_ptr<ClientStream> stream, ConnectionOrigin origin) {
  if (!stream) return;
  std::uint64_t id = core_->next_session_id();
  core_->add_session(std::make_unique<Session>(*core_, id, std::move(stream), std::move(origin))).start_http();
}

void Proxy::accept_socks(std::unique_ptr<ClientStream> stream, std::string host, std::uint16_t port, SocksVerdict verdict,
                         ConnectionOrigin origin) {
  if (!stream) return;
  Result<Host> parsed = parse_host(host);
  if (!parsed || port == 0) {
    std::string why = !parsed ? parsed.error().message : "port 0 of " + host + " cannot be connected to";
    if (verdict) verdict(false, kSocksHostUnreachable, "lockroom: " + why);
    return;
  }
  std::uint64_t id = core_->next_session_id();
  core_->add_session(std::make_unique<Session>(*core_, id, std::move(stream), std::move(origin)))
      .start_socks(std::move(parsed.value()), port, std::move(verdict));
}

void Proxy::set_policy(Policy policy) { core_->set_policy(std::move(policy)); }
const Policy& Proxy::policy() const { return core_->policy(); }
void Proxy::switch_off() { core_->switch_off(); }
bool Proxy::switched_off() const { return core_->switched_off(); }
std::string Proxy::ca_certificate_pem() const { return core_->ca_certificate_pem(); }
ProxyStats Proxy::stats() const { return core_->stats(); }
void Proxy::close(std::function<void()> done) { core_->close(std::move(done)); }

}  // namespace lockroom::egress
