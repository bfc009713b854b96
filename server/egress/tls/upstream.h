// UpstreamConnect: opens the TCP connection to an upstream host for the egress proxy, on a
// libuv loop, with the policy's address check applied to every address it would connect to.
//
// The host name is resolved with uv_getaddrinfo on the loop's thread pool. Each resolved address
// (in the resolver's order, at most max_addresses) goes to the caller's check, which is the
// policy's private-address test: because it sees the exact address about to be connected to, a
// DNS answer that changes between the policy decision and the connect (rebinding) cannot slip
// past it. The first address that passes is connected to, with a timeout per address; on a
// refusal by the check, a connect error or a timeout the next address is tried. The result is a
// started-but-not-reading UpstreamConnection, or an error that names the host, each address and
// the reason ("connect to 10.0.0.5:443 (from example.test) refused by policy: private address",
// "no address for nosuch.invalid", "connect to 192.0.2.1:443 timed out after 10 s").
//
// `done` runs exactly once, on the loop, never from inside start(), unless the UpstreamConnect
// is destroyed first (that cancels the attempt and done never runs). Loop thread only.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <uv.h>

#include "server/common/result.h"
#include "server/egress/tls/upstream_connection.h"

namespace lockroom::egress::tls {

using AddressCheck = std::function<Result<void>(const sockaddr_storage& address)>;

struct UpstreamTarget {
  std::string host;    // a DNS name or an IP literal
  std::uint16_t port = 0;
  // When not empty: these addresses (port included) instead of resolving `host`, which then only
  // names them in messages. For a caller that resolved already, and for tests.
  std::vector<sockaddr_storage> addresses;
};

struct ConnectOptions {
  std::chrono::milliseconds timeout{10000};  // per address
  std::size_t max_addresses = 8;
};

// "93.184.216.34:443", "[2001:db8::1]:443".
std::string format_address(const sockaddr_storage& address);

class UpstreamConnect {
 public:
  using Done = std::function<void(Result<std::unique_ptr<UpstreamConnection>>)>;

  static std::unique_ptr<UpstreamConnect> start(uv_loop_t* loop, UpstreamTarget target, AddressCheck check, Done done,
                                                ConnectOptions options = {});
  ~UpstreamConnect();
  UpstreamConnect(const UpstreamConnect&) = delete;
  UpstreamConnect& operator=(const UpstreamConnect&) = delete;

 private:
  struct ResolveReq;
  UpstreamConnect(uv_loop_t* loop, UpstreamTarget target, AddressCheck check, Done done, ConnectOptions options);
  void begin();
  void kick();
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result);
  static void on_connected(uv_connect_t* req, int status);
  static void on_timeout(uv_timer_t* timer);
  void try_next();
  void give_up_on_current(const std::string& why);
  void finish(Result<std::unique_ptr<UpstreamConnection>> result);
  std::string describe(const sockaddr_storage& address) const;

  uv_loop_t* loop_;
  UpstreamTarget target_;
  AddressCheck check_;
  Done done_;
  ConnectOptions options_;
  uv_timer_t* timer_ = nullptr;
  uv_tcp_t* tcp_ = nullptr;       // the attempt in progress
  ResolveReq* resolving_ = nullptr;
  std::size_t next_ = 0;          // index into target_.addresses
  sockaddr_storage current_{};    // the address being connected to
  bool kicked_ = false;           // the first timer tick (start's work, off start's stack) ran
  std::size_t policy_refusals_ = 0;
  std::vector<std::string> failures_;
  std::optional<Error> policy_refusal_;  // the first refusal by the check, for its code
  bool finished_ = false;
};

}  // namespace lockroom::egress::tls
