// UpstreamConnect; see upstream.h.
#include "server/egress/tls/upstream.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "server/common/uv_handle.h"

namespace lockroom::egress::tls {

namespace {

constexpr std::size_t kMaxHostLength = 253;

std::string address_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof text);
  if (address.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, text, sizeof text);
  return text;
}

std::uint16_t port_of(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  return 0;
}

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  return a.ss_family == b.ss_family && address_text(a) == address_text(b) && port_of(a) == port_of(b);
}

}  // namespace

struct UpstreamConnect::ResolveReq {
  uv_getaddrinfo_t req;
  UpstreamConnect* owner;
};

std::string format_address(const sockaddr_storage& address) {
  std::string host = address_text(address);
  if (address.ss_family == AF_INET6) host = "[" + host + "]";
  return host + ":" + std::to_string(port_of(address));
}

std::unique_ptr<UpstreamConnect> UpstreamConnect::start(uv_loop_t* loop, UpstreamTarget target, AddressCheck check,
                                                        Done done, ConnectOptions options) {
  std::unique_ptr<UpstreamConnect> attempt(
      new UpstreamConnect(loop, std::move(target), std::move(check), std::move(done), options));
  attempt->begin();
  return attempt;
}

UpstreamConnect::UpstreamConnect(uv_loop_t* loop, UpstreamTarget target, AddressCheck check, Done done,
                                 ConnectOptions options)
    : loop_(loop), target_(std::move(target)), check_(std::move(check)), done_(std::move(done)), options_(options) {}

UpstreamConnect::~UpstreamConnect() {
  if (resolving_) {
    resolving_->owner = nullptr;
    uv_cancel(reinterpret_cast<uv_req_t*>(&resolving_->req));
  }
  close_handle(tcp_);
  close_handle(timer_);
}

void UpstreamConnect::begin() {
  // Everything, errors included, happens from the loop: a zero timer runs kick().
  timer_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop_, timer_);
  uv_timer_start(timer_, on_timeout, 0, 0);
}

void UpstreamConnect::kick() {
  const std::string& host = target_.host;
  if (host.empty() || host.size() > kMaxHostLength || host.find('\0') != std::string::npos)
    return finish(make_error(ErrorCode::kInvalidInput, "'" + host.substr(0, 64) + "' is not a host name to connect to"));
  if (target_.port == 0) return finish(make_error(ErrorCode::kInvalidInput, "port 0 of " + host + " cannot be connected to"));
  if (!check_) return finish(make_error(ErrorCode::kInvalidInput, "connecting upstream needs an address check"));
  if (!target_.addresses.empty()) return try_next();

  auto* req = new ResolveReq{};
  req->owner = this;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  std::string port = std::to_string(target_.port);
  if (int rc = uv_getaddrinfo(loop_, &req->req, on_resolved, host.c_str(), port.c_str(), &hints); rc < 0) {
    delete req;
    return finish(make_error(ErrorCode::kUnavailable, "cannot resolve " + host + ": " + uv_strerror(rc)));
  }
  resolving_ = req;
}

void UpstreamConnect::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result) {
  std::unique_ptr<ResolveReq> owned(reinterpret_cast<ResolveReq*>(req));
  UpstreamConnect* self = owned->owner;
  if (!self) {
    uv_freeaddrinfo(result);
    return;
  }
  self->resolving_ = nullptr;
  const std::string& host = self->target_.host;
  if (status == UV_EAI_NONAME || status == UV_EAI_NODATA)
    return self->finish(make_error(ErrorCode::kNotFound, "no address for " + host));
  if (status < 0) return self->finish(make_error(ErrorCode::kUnavailable, "cannot resolve " + host + ": " + uv_strerror(status)));

  for (addrinfo* info = result; info && self->target_.addresses.size() < self->options_.max_addresses; info = info->ai_next) {
    if (info->ai_family != AF_INET && info->ai_family != AF_INET6) continue;
    if (info->ai_addrlen > sizeof(sockaddr_storage)) continue;
    sockaddr_storage address{};
    std::memcpy(&address, info->ai_addr, info->ai_addrlen);
    auto& list = self->target_.addresses;
    if (std::none_of(list.begin(), list.end(), [&](const sockaddr_storage& seen) { return same_address(seen, address); }))
      list.push_back(address);
  }
  uv_freeaddrinfo(result);
  if (self->target_.addresses.empty()) return self->finish(make_error(ErrorCode::kNotFound, "no address for " + host));
  self->try_next();
}

void UpstreamConnect::try_next() {
  while (next_ < target_.addresses.size()) {
    current_ = target_.addresses[next_++];
    Result<void> allowed = make_error(ErrorCode::kInternal, "the address check failed unexpectedly");
    try {
      allowed = check_(current_);
    } catch (...) {
    }
    if (!allowed) {
      failures_.push_back("connect to " + describe(current_) + " refused by policy: " + allowed.error().message);
      if (!policy_refusal_) policy_refusal_ = allowed.error();
      ++policy_refusals_;
      continue;
    }
    tcp_ = new_handle<uv_tcp_t>(this);
    if (int rc = uv_tcp_init(loop_, tcp_); rc < 0) {
      delete_unopened_handle(tcp_);
      tcp_ = nullptr;
      failures_.push_back("connect to " + describe(current_) + " failed: " + uv_strerror(rc));
      continue;
    }
    auto* req = new uv_connect_t{};
    if (int rc = uv_tcp_connect(req, tcp_, reinterpret_cast<const sockaddr*>(&current_), on_connected); rc < 0) {
      delete req;
      close_handle(tcp_);
      failures_.push_back("connect to " + describe(current_) + " failed: " + uv_strerror(rc));
      continue;
    }
    uv_timer_start(timer_, on_timeout, static_cast<std::uint64_t>(options_.timeout.count()), 0);
    return;
  }
  std::string message = failures_.size() == 1 ? failures_.front()
                                              : "cannot connect to " + target_.host + " port " + std::to_string(target_.port) + ": ";
  for (std::size_t i = 0; failures_.size() > 1 && i < failures_.size(); ++i) message += (i ? "; " : "") + failures_[i];
  bool all_refused = policy_refusals_ == failures_.size() && policy_refusal_;
  finish(make_error(all_refused ? policy_refusal_->code : ErrorCode::kUnavailable, message));
}

void UpstreamConnect::on_connected(uv_connect_t* req, int status) {
  std::unique_ptr<uv_connect_t> owned(req);
  auto* self = static_cast<UpstreamConnect*>(req->handle->data);
  if (!self) return;  // the attempt was abandoned (timeout or cancel) and its handle closed
  uv_timer_stop(self->timer_);
  if (status < 0) {
    self->give_up_on_current("failed: " + std::string(uv_strerror(status)));
    return;
  }
  uv_tcp_t* tcp = self->tcp_;
  self->tcp_ = nullptr;
  std::string description = self->describe(self->current_);
  self->finish(std::make_unique<UpstreamConnection>(tcp, std::move(description), self->current_));
}

void UpstreamConnect::on_timeout(uv_timer_t* timer) {
  auto* self = static_cast<UpstreamConnect*>(timer->data);
  if (!self) return;
  if (!self->kicked_) {
    self->kicked_ = true;
    return self->kick();
  }
  self->give_up_on_current("timed out after " + duration_text(self->options_.timeout));
}

void UpstreamConnect::give_up_on_current(const std::string& why) {
  failures_.push_back("connect to " + describe(current_) + " " + why);
  close_handle(tcp_);
  try_next();
}

void UpstreamConnect::finish(Result<std::unique_ptr<UpstreamConnection>> result) {
  if (finished_) return;
  finished_ = true;
  close_handle(timer_);
  Done done = std::move(done_);
  done_ = nullptr;
  if (done) done(std::move(result));  // may destroy this
}

std::string UpstreamConnect::describe(const sockaddr_storage& address) const {
  std::string text = format_address(address);
  if (target_.host != address_text(address)) text += " (from " + target_.host + ")";
  return text;
}

}  // namespace lockroom::egress::tls
