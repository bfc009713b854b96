// The net.* methods, listeners and DNS refuser; see net_service.h.
#include "guest/net_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <tuple>
#include <variant>

#include "guest/log.h"
#include "guest/net_dns.h"
#include "guest/net_peer.h"
#include "guest/net_trust.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

namespace {

constexpr int kBacklog = 128;
constexpr int kAcceptsPerTurn = 32;
constexpr int kDnsPerTurn = 32;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A socket bound to 127.0.0.1:port (0: any free port); the bound port, or errno.
std::variant<std::pair<int, std::int64_t>, int> bind_loopback(int type, std::int64_t port) {
  int fd = ::socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || (type == SOCK_STREAM && ::listen(fd, kBacklog) != 0) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return err;
  }
  return std::make_pair(fd, static_cast<std::int64_t>(ntohs(addr.sin_port)));
}

}  // namespace

NetService::NetService(Connection& connection, NetSettings settings) : connection_(connection), settings_(std::move(settings)) {}

NetService::~NetService() {
  connections_.clear();
  close_listeners();
}

void NetService::close_listeners() {
  close_fd(http_fd_);
  close_fd(socks_fd_);
  close_fd(dns_fd_);
}

Outcome NetService::enable(const json& params) {
  auto parsed = channel::parse_net_enable_params(params);
  if (!parsed) return invalid_params(parsed.error());
  if (enabled_) return channel::to_json(bound_);  // already listening: the same ports again
  channel::NetEnableResult bound;
  auto listen_on = [](std::int64_t port, const char* what, int& fd, std::int64_t& bound_port) -> std::optional<RpcError> {
    auto made = bind_loopback(SOCK_STREAM, port);
    if (auto* err = std::get_if<int>(&made)) return errno_error(*err, std::string("net.enable: listening on 127.0.0.1:") + std::to_string(port) + " (" + what + ")");
    std::tie(fd, bound_port) = std::get<std::pair<int, std::int64_t>>(made);
    return std::nullopt;
  };
  if (auto error = listen_on(parsed->http.value_or(settings_.http_port), "HTTP proxy", http_fd_, bound.http)) {
    close_listeners();
    return *error;
  }
  if (auto error = listen_on(parsed->socks.value_or(settings_.socks_port), "SOCKS5 proxy", socks_fd_, bound.socks)) {
    close_listeners();
    return *error;
  }
  if (settings_.dns_port) {
    auto made = bind_loopback(SOCK_DGRAM, *settings_.dns_port);
    if (auto* err = std::get_if<int>(&made)) {
      // Without it resolvers still fail (nothing answers on loopback), only less clearly.
      log_warn("the DNS refuser cannot listen on 127.0.0.1:" + std::to_string(*settings_.dns_port) + ": " + std::strerror(*err));
    } else {
      std::tie(dns_fd_, bound.dns) = std::get<std::pair<int, std::int64_t>>(made);
    }
  }
  bound.max_connections = parsed->max_connections.value_or(settings_.max_connections);
  bound_ = bound;
  enabled_ = true;
  log_info("egress enabled: HTTP proxy on 127.0.0.1:" + std::to_string(bound.http) + ", SOCKS5 on 127.0.0.1:" + std::to_string(bound.socks) +
           (bound.dns ? ", DNS refuser on 127.0.0.1:" + std::to_string(bound.dns) : std::string()));
  return channel::to_json(bound_);
}

Outcome NetService::trust(const json& params) {
  auto parsed = channel::parse_net_trust_params(params);
  if (!parsed) return invalid_params(parsed.error());
  auto installed = install_ca(settings_.cert_dir, parsed->pem);
  if (auto* error = std::get_if<RpcError>(&installed)) return *error;
  trusted_ = std::get<channel::NetTrustResult>(installed);
  return channel::to_json(*trusted_);
}

NetConnection* NetService::waiting(std::uint32_t stream) {
  for (auto& c : connections_)
    if (c->stream() == stream && c->awaiting_verdict()) return c.get();
  return nullptr;
}

Outcome NetService::accept(const json& params) {
  auto parsed = channel::parse_net_accept_params(params);
  if (!parsed) return invalid_params(parsed.error());
  NetConnection* c = waiting(parsed->stream);
  if (!c) return make_rpc_error(agent_error::kNotFound, "net.accept: no SOCKS connection waits for a verdict on stream " + std::to_string(parsed->stream));
  c->accept();
  return json::object();
}

Outcome NetService::refuse(const json& params) {
  auto parsed = channel::parse_net_refuse_params(params);
  if (!parsed) return invalid_params(parsed.error());
  NetConnection* c = waiting(parsed->stream);
  if (!c) return make_rpc_error(agent_error::kNotFound, "net.refuse: no SOCKS connection waits for a verdict on stream " + std::to_string(parsed->stream));
  c->refuse(parsed->socks_code, parsed->reason);
  return json::object();
}

void NetService::add_polls(PollSet& set) {
  if (!enabled_) return;
  set.add(http_fd_, POLLIN, [this](short) { accept_clients(http_fd_, channel::NetKind::kHttp); });
  set.add(socks_fd_, POLLIN, [this](short) { accept_clients(socks_fd_, channel::NetKind::kSocks); });
  if (dns_fd_ >= 0) set.add(dns_fd_, POLLIN, [this](short) { answer_dns(); });
  for (auto& c : connections_) c->add_polls(set);
}

void NetService::accept_clients(int listener, channel::NetKind kind) {
  for (int i = 0; i < kAcceptsPerTurn && listener >= 0; ++i) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
        log_warn(std::string("accepting a proxy connection failed: ") + std::strerror(errno));
      return;
    }
    std::int64_t client_port = ntohs(peer.sin_port);
    auto connection = std::make_unique<NetConnection>(connection_, fd, kind, client_port);
    if (connections_.size() >= static_cast<std::size_t>(bound_.max_connections)) {
      if (!refusing_)  // once per stretch at the limit: a program retrying in a loop must not flood the console
        log_warn("proxy connections are refused: " + std::to_string(connections_.size()) + " are open, the limit (lockroom.net.max)");
      refusing_ = true;
      continue;  // the destructor closes it with RST
    }
    refusing_ = false;
    std::int64_t proxy_port = kind == channel::NetKind::kSocks ? bound_.socks : bound_.http;
    if (auto peer = find_peer_process(static_cast<std::uint16_t>(client_port), static_cast<std::uint16_t>(proxy_port), ::getpid()))
      connection->set_client_process(peer->pid, std::move(peer->command), peer->started);
    if (connection->start()) connections_.push_back(std::move(connection));
  }
}

void NetService::answer_dns() {
  for (int i = 0; i < kDnsPerTurn; ++i) {
    char buf[512];
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    ssize_t n = ::recvfrom(dns_fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return;
    std::string_view query(buf, static_cast<std::size_t>(n));
    std::string reply = dns_refusal(query);
    if (reply.empty()) continue;
    ::sendto(dns_fd_, reply.data(), reply.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), len);
    std::string name = dns_question_name(query);
    if (logged_names_.size() < kMaxLoggedNames && logged_names_.insert(name).second)
      log_warn("refused a DNS lookup of \"" + name + "\": the sandbox has no network; programs reach the outside only through the proxy " +
               "(HTTP_PROXY, HTTPS_PROXY, ALL_PROXY)");
  }
}

void NetService::pump() {
  std::erase_if(connections_, [](const std::unique_ptr<NetConnection>& c) { return c->done(); });
}

std::vector<std::string> NetService::environment() const {
  std::vector<std::string> env;
  auto both = [&env](const std::string& name, const std::string& value) {
    env.push_back(name + "=" + value);
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    env.push_back(lower + "=" + value);
  };
  if (enabled_) {
    std::string http = "http://127.0.0.1:" + std::to_string(bound_.http);
    both("HTTP_PROXY", http);
    both("HTTPS_PROXY", http);
    both("ALL_PROXY", "socks5h://127.0.0.1:" + std::to_string(bound_.socks));
    both("NO_PROXY", "localhost,127.0.0.1,::1");
  }
  if (trusted_) {
    env.push_back("SSL_CERT_FILE=" + trusted_->bundle);
    env.push_back("NODE_EXTRA_CA_CERTS=" + trusted_->certificate);
    env.push_back("REQUESTS_CA_BUNDLE=" + trusted_->bundle);
    env.push_back("GIT_SSL_CAINFO=" + trusted_->bundle);
    env.push_back("CURL_CA_BUNDLE=" + trusted_->bundle);
  }
  return env;
}

void NetService::abandon_all() {
  // Connections are forgotten by pump(): a poll handler of this turn may still hold one.
  for (auto& c : connections_) c->abandon();
  close_listeners();
  enabled_ = false;
  bound_ = {};
  trusted_.reset();
}

}  // namespace lockroom::agent
