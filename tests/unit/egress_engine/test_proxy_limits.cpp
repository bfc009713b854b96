// The proxy's limits, with short timeouts on real loopback sockets: a request head that does
// not arrive in time (408) or never starts (closed), a kept-alive connection nobody uses, a
// server that never answers (504 after the idle timeout), an idle tunnel, a tunnel whose first
// bytes never come, the sandbox's cap on upstream connections (503 and a SOCKS failure, audited,
// and the slot given back), and the cap on a request head's size.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>

#include "server/egress/engine/uv_client_stream.h"
#include "tests/unit/egress_engine/engine_test_support.h"

using namespace lockroom::egress;
using namespace lockroom::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::string get(std::uint16_t port, const std::string& path) {
  return "GET http://127.0.0.1:" + std::to_string(port) + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

ProxyOptions allowing_loopback() {
  ProxyOptions options;
  options.policy = policy_from(
      R"({"rules":[{"action":"allow","host":"127.0.0.1","schemes":["http","https","tcp"],"name":"loopback"}],"defaultAllow":false})");
  return options;
}

// A server that takes connections (the kernel's backlog does) and never says anything.
struct SilentServer {
  SilentServer() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(listen(fd, 16) == 0);
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port = ntohs(address.sin_port);
  }
  ~SilentServer() { stop(); }
  // Closing the listener resets the connections it never accepted.
  void stop() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int fd = -1;
  std::uint16_t port = 0;
};

// Milliseconds until the guest's socket reports the end (or a reset); -1 if data came instead.
double ms_until_closed(int fd) {
  auto start = Clock::now();
  char byte;
  long got = recv(fd, &byte, 1, 0);
  if (got > 0) return -1;
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("limits: a request head that does not arrive whole in time gets 408 and is audited", "[proxy][limits]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options = allowing_loopback();
  options.request_head_timeout = 200ms;
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  auto start = Clock::now();
  harness.run_http([&](int fd) {
    send_all(fd, "GET http://127.0.0.1:" + std::to_string(server->port()) + "/slow HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    answer = read_answer(socket_reader(fd));
  });
  double took = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  CHECK(answer.status == 408);
  CHECK(answer.body == "lockroom: the request head did not arrive whole within 200 ms; send the whole head at once\n");
  CHECK(took >= 150);
  CHECK(server->requests() == 0);
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].decision == "deny");
  CHECK(harness.events[0].reason == "request head timeout (200 ms)");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: a connection that never sends a request is closed after the head timeout", "[proxy][limits]") {
  ProxyOptions options = allowing_loopback();
  options.request_head_timeout = 200ms;
  ProxyHarness harness(std::move(options));
  double closed_after = 0;
  harness.run_http([&](int fd) { closed_after = ms_until_closed(fd); });
  CHECK(closed_after >= 150);
  CHECK(closed_after < 5000);
  CHECK(harness.events.empty());  // nothing was asked, nothing decided
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: a kept-alive connection with no next request is closed after the idle timeout", "[proxy][limits]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options = allowing_loopback();
  options.idle_timeout = 250ms;
  options.request_head_timeout = 10s;
  ProxyHarness harness(std::move(options));
  HttpAnswer first, second;
  double closed_after = 0;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/one"));
    first = read_answer(socket_reader(fd));
    // Within the idle timeout the connection is still there for the next request.
    usleep(100 * 1000);
    send_all(fd, get(server->port(), "/two"));
    second = read_answer(socket_reader(fd));
    closed_after = ms_until_closed(fd);
  });
  CHECK(first.status == 200);
  CHECK(second.body == "hello GET /two\n");
  CHECK(closed_after >= 200);
  CHECK(closed_after < 5000);
  CHECK(harness.events.size() == 2);
  CHECK(server->connections() == 1);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: a server that never answers is given up after the idle timeout with a 504", "[proxy][limits]") {
  SilentServer silent;
  ProxyOptions options = allowing_loopback();
  options.idle_timeout = 300ms;
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, get(silent.port, "/never"));
    answer = read_answer(socket_reader(fd));
  });
  CHECK(answer.status == 504);
  CHECK(answer.body == "lockroom: 127.0.0.1:" + std::to_string(silent.port) + " sent no answer for 300 ms (the idle timeout)\n");
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].decision == "allow");
  CHECK(harness.events[0].reason == "no byte either way for 300 ms (the idle timeout)");
  CHECK(harness.proxy().stats().upstream_connections == 0);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: an idle tunnel is closed and audited with its bytes", "[proxy][limits][socks]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options = allowing_loopback();
  options.idle_timeout = 300ms;
  ProxyHarness harness(std::move(options));
  ProxyHarness::SocksOutcome verdict;
  HttpAnswer answer;
  double closed_after = 0;
  harness.run_socks("127.0.0.1", server->port(), verdict, [&](int fd) {
    send_all(fd, "GET /raw HTTP/1.1\r\nHost: x\r\n\r\n");
    answer = read_answer(socket_reader(fd));
    closed_after = ms_until_closed(fd);  // the server keeps its side open: only the proxy ends it
  });
  CHECK(verdict.ok);
  CHECK(answer.body == "hello GET /raw\n");
  CHECK(closed_after >= 250);
  CHECK(closed_after < 5000);
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].decision == "allow");
  CHECK(harness.events[0].reason == "closed after 300 ms without a byte either way (the idle timeout)");
  CHECK(harness.events[0].bytes_up > 0);
  CHECK(harness.events[0].bytes_down > 0);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: a CONNECT tunnel whose first bytes never come is ended and audited", "[proxy][limits][tunnel]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options = allowing_loopback();
  options.request_head_timeout = 200ms;
  ProxyHarness harness(std::move(options));
  HttpAnswer established;
  double closed_after = 0;
  harness.run_http([&](int fd) {
    send_all(fd, "CONNECT 127.0.0.1:" + std::to_string(server->port()) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    established = read_answer(socket_reader(fd), "CONNECT");
    closed_after = ms_until_closed(fd);
  });
  CHECK(established.status == 200);
  CHECK(closed_after >= 150);
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].decision == "deny");
  CHECK(harness.events[0].reason == "the guest sent no first message (a TLS ClientHello) into the tunnel within 200 ms");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: over the sandbox's upstream connection cap the proxy answers 503 / a SOCKS failure, audited",
          "[proxy][limits]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  SilentServer silent;
  ProxyOptions options = allowing_loopback();
  options.max_upstream_connections = 1;
  ProxyHarness harness(std::move(options));

  // A first guest connection holds the only slot: its request waits on a server that never answers.
  FdPair holder = make_socketpair();
  REQUIRE(holder.read_end >= 0);
  auto stream = UvClientStream::open(harness.loop(), holder.read_end);
  REQUIRE(stream.ok());
  harness.proxy().accept_http(std::move(stream.value()));
  REQUIRE(send_all(holder.write_end, get(silent.port, "/hold")));
  harness.run_until([&] { return harness.proxy().stats().upstream_connections == 1; });
  REQUIRE(harness.proxy().stats().upstream_connections == 1);

  // (No settling after these: the holder's session stays open on purpose.)
  HttpAnswer refused;
  harness.run_http(
      [&](int fd) {
        send_all(fd, get(server->port(), "/more"));
        refused = read_answer(socket_reader(fd));
      },
      false);
  CHECK(refused.status == 503);
  CHECK(refused.body ==
        "lockroom: this sandbox already has 1 upstream connections open (its limit); close some (or reuse them with "
        "keep-alive) and retry\n");
  ProxyHarness::SocksOutcome socks;
  FdPair socks_pair = make_socketpair();
  auto socks_stream = UvClientStream::open(harness.loop(), socks_pair.read_end);
  REQUIRE(socks_stream.ok());
  harness.proxy().accept_socks(std::move(socks_stream.value()), "127.0.0.1", server->port(),
                               [&socks](bool ok, int reply, std::string reason) {
                                 socks.called = true;
                                 socks.ok = ok;
                                 socks.reply = reply;
                                 socks.reason = std::move(reason);
                               });
  harness.run_until([&] { return socks.called && harness.events.size() == 2; });
  ::close(socks_pair.write_end);
  CHECK(socks.called);
  CHECK_FALSE(socks.ok);
  CHECK(socks.reply == 1);
  CHECK(socks.reason.find("(its limit)") != std::string::npos);
  CHECK(server->connections() == 0);
  REQUIRE(harness.events.size() == 2);
  for (const AuditRecord& record : harness.events) {
    CHECK(record.decision == "deny");
    CHECK(record.rule == "connection limit");
    CHECK(record.reason == "the sandbox's limit of 1 upstream connections is reached");
  }

  // The holder's upstream breaks (502): its slot is free again.
  silent.stop();
  harness.run_until([&] { return harness.proxy().stats().upstream_connections == 0; });
  CHECK(harness.proxy().stats().upstream_connections == 0);
  set_socket_timeouts(holder.write_end, 5);
  CHECK(read_answer(socket_reader(holder.write_end)).status == 502);
  ::close(holder.write_end);
  HttpAnswer served;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/again"));
    served = read_answer(socket_reader(fd));
  });
  CHECK(served.body == "hello GET /again\n");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: a request head over 64 KiB is refused with 400 naming the limit", "[proxy][limits]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyHarness harness(allowing_loopback());
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    std::string head = "GET http://127.0.0.1:" + std::to_string(server->port()) + "/big-head HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                       "X-Filler: " + std::string(70 * 1024, 'a') + "\r\n\r\n";
    send_all(fd, head);
    answer = read_answer(socket_reader(fd));
  });
  CHECK(answer.status == 400);
  CHECK(answer.body == "lockroom: cannot read this request: the request head is larger than 64 KiB\n");
  CHECK(server->requests() == 0);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("limits: timeouts and the connection cap must be positive", "[proxy][limits]") {
  TestLoop loop(1000);
  ProxyOptions options = allowing_loopback();
  options.sandbox_id = "sb-test";
  options.idle_timeout = 0ms;
  auto made = Proxy::create(loop.get(), options);
  REQUIRE_FALSE(made.ok());
  CHECK(made.error().message.find("above 0 ms") != std::string::npos);
  options.idle_timeout = 1s;
  options.max_upstream_connections = 0;
  made = Proxy::create(loop.get(), options);
  REQUIRE_FALSE(made.ok());
  CHECK(made.error().message == "max_upstream_connections must be at least 1");
  CHECK(loop.finish() == 0);
}
