// Test support for the egress proxy engine: a plain HTTP server on loopback, a harness that runs
// a Proxy on a real libuv loop and drives one "guest" connection at a time from a thread with a
// blocking socket (through a socketpair and UvClientStream, the same path a real adapter takes),
// and small blocking HTTP and TLS clients for that thread.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/egress/engine/proxy.h"
#include "server/egress/tls/openssl_util.h"
#include "tests/unit/uv_test_util.h"

namespace lockroom::testing {

// HTTP/1.1 on 127.0.0.1, a thread per connection, keep-alive. `GET /big/<n>` answers n bytes of
// 'x'; every other request gets 200 "hello <method> <path>\n". Requests (head and body) are kept.
class HttpTestServer {
 public:
  static std::unique_ptr<HttpTestServer> start();
  ~HttpTestServer();
  std::uint16_t port() const { return port_; }
  int connections() const { return connections_; }
  int requests() const { return requests_; }
  std::vector<std::string> received() const;  // each request's head and body, in order

 private:
  HttpTestServer() = default;
  void serve();
  void serve_one(int fd);
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::vector<std::thread> workers_;
  std::vector<int> open_fds_;
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> received_;
};

// A parsed answer as the guest's client saw it.
struct HttpAnswer {
  int status = 0;
  std::string head;
  std::string body;
  std::string error;  // set when no complete answer arrived
};

// Reads bytes for the blocking clients: returns >0 bytes, 0 at end, <0 on error.
using ReadFn = std::function<long(char* buffer, std::size_t size)>;
using WriteFn = std::function<bool(const std::string& bytes)>;

bool send_all(int fd, const std::string& bytes);
// One response, parsed with the project's ResponseHeadParser. `slow_reader` sleeps between reads.
HttpAnswer read_answer(const ReadFn& read, const std::string& method = "GET", int slow_reader_us = 0);
ReadFn socket_reader(int fd);
void set_socket_timeouts(int fd, int seconds);

// A blocking TLS client over a connected socket, trusting one CA given as PEM.
class TlsTestClient {
 public:
  TlsTestClient(const std::string& ca_pem, int fd, const std::string& sni);
  bool handshake();  // verifies the certificate against `sni`
  const std::string& error() const { return error_; }
  ReadFn reader();
  WriteFn writer();

 private:
  egress::tls::SslCtxPtr ctx_;
  egress::tls::SslPtr ssl_;
  std::string sni_;
  std::string error_;
};

// A Proxy on a TestLoop; every audit record (the "close" events, phase cleared as in the log) is
// kept in `events`, and every event as sent (open, progress, close) in `all_events`.
class ProxyHarness {
 public:
  explicit ProxyHarness(egress::ProxyOptions options);
  ~ProxyHarness();
  egress::Proxy& proxy() { return *proxy_; }
  uv_loop_t* loop() { return loop_.get(); }
  // Opens a guest connection with accept_http and runs `guest(fd)` on a thread; the loop runs
  // until it returned (its socket is closed then) and, with `settle`, until the proxy has no
  // session left (so the last audit records are in), for at most 2 s.
  void run_http(const std::function<void(int fd)>& guest, bool settle = true, egress::ConnectionOrigin origin = {});
  // One more guest connection (accept_http now), for a guest that uses several at once: its
  // socket, which the caller closes.
  int open_http(egress::ConnectionOrigin origin = {});
  // The same through accept_socks; `verdict` is what the proxy answered.
  struct SocksOutcome {
    bool called = false;
    bool ok = false;
    int reply = -1;
    std::string reason;
  };
  void run_socks(const std::string& host, std::uint16_t port, SocksOutcome& verdict, const std::function<void(int fd)>& guest);
  // Runs the loop until `done` or `limit`.
  void run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(5));
  // proxy.close(), then the loop to the end: uv_loop_close()'s answer (0: nothing leaked).
  int close_all();

  std::vector<egress::AuditRecord> events;
  std::vector<egress::AuditRecord> all_events;
  bool close_done = false;

 private:
  void run_guest(int guest_fd, const std::function<void(int fd)>& guest, bool settle);
  TestLoop loop_;
  std::unique_ptr<egress::Proxy> proxy_;
};

// A policy from JSON text (fails the test on error), without the default allow list.
egress::Policy policy_from(const std::string& json_text);

}  // namespace lockroom::testing
