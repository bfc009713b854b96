// NetService: the net.* methods and the agent's loopback egress (protocol/channel.md, "Network").
//
// Nothing listens until the host calls net.enable (a guest restored from a template stays silent
// until a host wants it). Then, on 127.0.0.1: an HTTP proxy port and a SOCKS5 port whose accepted
// connections become NetConnections (streams to the host), and a DNS refuser on UDP that answers
// every query with REFUSED and logs each name once on the console, so programs that ignore the
// proxy variables fail at once with "name resolution failed" instead of waiting for a timeout.
// Over `max_connections` open connections, a new one is closed at once with RST. environment()
// gives the proxy (and, after net.trust, CA) variables for processes started afterwards. A new
// session (hello, host gone) closes everything: the next host enables networking again.
// Loop thread only.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "guest/connection.h"
#include "guest/errors.h"
#include "guest/net_connection.h"
#include "guest/poll_set.h"
#include "guest/settings.h"

namespace lockroom::agent {

class NetService {
 public:
  static constexpr std::size_t kMaxLoggedNames = 1024;  // DNS names logged once each, then silence

  NetService(Connection& connection, NetSettings settings);
  ~NetService();
  NetService(const NetService&) = delete;
  NetService& operator=(const NetService&) = delete;

  Outcome enable(const json& params);
  Outcome trust(const json& params);
  Outcome accept(const json& params);
  Outcome refuse(const json& params);

  void add_polls(PollSet& set);
  // Forgets connections that are finished.
  void pump();
  // NAME=value entries every process started from now on gets (unless its own env sets NAME).
  std::vector<std::string> environment() const;
  void abandon_all();
  std::size_t connections() const { return connections_.size(); }

 private:
  void accept_clients(int listener, protocol::channel::NetKind kind);
  void answer_dns();
  NetConnection* waiting(std::uint32_t stream);
  void close_listeners();

  Connection& connection_;
  NetSettings settings_;
  bool enabled_ = false;
  protocol::channel::NetEnableResult bound_;
  int http_fd_ = -1;
  int socks_fd_ = -1;
  int dns_fd_ = -1;
  std::vector<std::unique_ptr<NetConnection>> connections_;
  std::unordered_set<std::string> logged_names_;
  bool refusing_ = false;  // at the connection limit (logged once)
  std::optional<protocol::channel::NetTrustResult> trusted_;
};

}  // namespace lockroom::agent
