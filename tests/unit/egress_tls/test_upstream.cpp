// UpstreamConnect and UpstreamConnection on a real libuv loop against loopback sockets: the
// address check sees every address and a refusal means no connection is made, fallback to the
// next address, a connect timeout on a listener whose backlog is full, names that do not
// resolve, cancellation, and a byte exchange with half-close.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

#include "server/egress/tls/upstream.h"
#include "tests/unit/uv_test_util.h"

using namespace lockroom::egress::tls;
using lockroom::ErrorCode;
using lockroom::Result;
using lockroom::testing::TestLoop;

namespace {

// A loopback TCP socket: listening (with `backlog`) or, when backlog < 0, only bound (nothing
// listens on its port, so connecting is refused).
struct LoopbackSocket {
  explicit LoopbackSocket(int backlog = 16) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    if (backlog >= 0) REQUIRE(listen(fd, backlog) == 0);
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port = ntohs(address.sin_port);
  }
  ~LoopbackSocket() { ::close(fd); }
  // A connection waiting to be accepted, if any (never blocks).
  int accept_now() { return accept4(fd, nullptr, nullptr, SOCK_CLOEXEC); }
  int fd = -1;
  std::uint16_t port = 0;
};

sockaddr_storage ipv4(const char* text, std::uint16_t port) {
  sockaddr_storage storage{};
  auto& address = reinterpret_cast<sockaddr_in&>(storage);
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, text, &address.sin_addr);
  return storage;
}

Result<void> allow_all(const sockaddr_storage&) { return {}; }

// Runs the loop until `done` is true, for at most 5 s. (Some conditions are on plain sockets
// the loop does not watch, so it polls instead of blocking in the loop.)
template <typename Pred>
void run_until(TestLoop& loop, Pred done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    uv_run(loop.get(), UV_RUN_NOWAIT);
    usleep(500);
  }
}

struct Outcome {
  std::optional<Result<std::unique_ptr<UpstreamConnection>>> result;
  bool done() const { return result.has_value(); }
  std::string error() const { return result && !result->ok() ? result->error().message : std::string(); }
};

std::unique_ptr<UpstreamConnect> connect(TestLoop& loop, UpstreamTarget target, AddressCheck check, Outcome& outcome,
                                         ConnectOptions options = {}) {
  return UpstreamConnect::start(
      loop.get(), std::move(target), std::move(check),
      [&outcome](Result<std::unique_ptr<UpstreamConnection>> result) { outcome.result.emplace(std::move(result)); },
      options);
}

}  // namespace

TEST_CASE("upstream connects, exchanges bytes and half-closes", "[upstream]") {
  lockroom::testing::ignore_sigpipe();
  LoopbackSocket server;
  TestLoop loop;
  std::vector<std::string> checked;
  Outcome outcome;
  auto attempt = connect(loop, {"127.0.0.1", server.port, {}},
                         [&](const sockaddr_storage& address) -> Result<void> {
                           checked.push_back(format_address(address));
                           return {};
                         },
                         outcome);
  CHECK_FALSE(outcome.done());  // never from inside start()
  run_until(loop, [&] { return outcome.done(); });
  REQUIRE(outcome.result->ok());
  CHECK(checked == std::vector<std::string>{"127.0.0.1:" + std::to_string(server.port)});
  std::unique_ptr<UpstreamConnection> connection = std::move(outcome.result->value());
  CHECK(connection->description() == "127.0.0.1:" + std::to_string(server.port));

  int peer = server.accept_now();
  REQUIRE(peer >= 0);
  std::string received;
  bool ended = false;
  int drained = 0;
  connection->start({[&](std::string_view bytes) { received.append(bytes); }, [&] { ended = true; },
                     [&](const std::string& why) { FAIL(why); }, [&] { ++drained; }});

  REQUIRE(send(peer, "hello upstream", 14, 0) == 14);
  run_until(loop, [&] { return received.size() == 14; });
  CHECK(received == "hello upstream");

  std::string big(4u << 20, 'z');  // more than the socket buffers: backpressure shows
  connection->write(big);
  CHECK(connection->queued_bytes() > 0);
  std::string peer_got;
  char chunk[65536];
  while (peer_got.size() < big.size()) {
    uv_run(loop.get(), UV_RUN_NOWAIT);
    ssize_t got = recv(peer, chunk, sizeof chunk, MSG_DONTWAIT);
    if (got > 0) peer_got.append(chunk, static_cast<std::size_t>(got));
  }
  run_until(loop, [&] { return drained > 0; });
  CHECK(peer_got == big);
  CHECK(connection->queued_bytes() == 0);
  CHECK(drained == 1);

  connection->shutdown_write();
  run_until(loop, [&] { return recv(peer, chunk, sizeof chunk, MSG_DONTWAIT) == 0; });
  ::shutdown(peer, SHUT_WR);
  run_until(loop, [&] { return ended; });
  CHECK(ended);

  ::close(peer);
  connection.reset();
  attempt.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream paused reading leaves the bytes in the socket until resumed", "[upstream]") {
  LoopbackSocket server;
  TestLoop loop;
  Outcome outcome;
  auto attempt = connect(loop, {"127.0.0.1", server.port, {}}, allow_all, outcome);
  run_until(loop, [&] { return outcome.done(); });
  REQUIRE(outcome.result->ok());
  auto connection = std::move(outcome.result->value());
  int peer = server.accept_now();
  REQUIRE(peer >= 0);
  std::string received;
  connection->start({[&](std::string_view bytes) { received.append(bytes); }, {}, {}, {}});
  connection->pause_reading();
  REQUIRE(send(peer, "held", 4, 0) == 4);
  for (int i = 0; i < 20; ++i) uv_run(loop.get(), UV_RUN_NOWAIT);
  CHECK(received.empty());
  connection->resume_reading();
  run_until(loop, [&] { return received == "held"; });
  CHECK(received == "held");
  ::close(peer);
  connection->close();
  CHECK_FALSE(connection->open());
  attempt.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream refused by the address check never connects", "[upstream]") {
  LoopbackSocket server;
  TestLoop loop;
  int checks = 0;
  Outcome outcome;
  auto attempt = connect(loop, {"localhost", server.port, {}},
                         [&](const sockaddr_storage&) -> Result<void> {
                           ++checks;
                           return lockroom::make_error(ErrorCode::kInvalidInput, "private address");
                         },
                         outcome);
  run_until(loop, [&] { return outcome.done(); });
  REQUIRE_FALSE(outcome.result->ok());
  CHECK(outcome.result->error().code == ErrorCode::kInvalidInput);  // the check's own code
  CHECK(checks >= 1);
  CHECK(outcome.error().find("connect to 127.0.0.1:" + std::to_string(server.port) +
                             " (from localhost) refused by policy: private address") != std::string::npos);
  // Nothing reached the listener.
  CHECK(server.accept_now() < 0);
  CHECK(errno == EAGAIN);
  attempt.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream refused by the check names the address and the host exactly", "[upstream]") {
  TestLoop loop;
  Outcome outcome;
  auto attempt = connect(loop, {"example.test", 443, {ipv4("10.0.0.5", 443)}},
                         [](const sockaddr_storage&) -> Result<void> {
                           return lockroom::make_error(ErrorCode::kInvalidInput, "private address");
                         },
                         outcome);
  run_until(loop, [&] { return outcome.done(); });
  CHECK(outcome.error() == "connect to 10.0.0.5:443 (from example.test) refused by policy: private address");
  attempt.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream tries the next address after a refusal by the check or a refused connect", "[upstream]") {
  LoopbackSocket server;
  LoopbackSocket closed(-1);  // bound, not listening: connecting is refused
  TestLoop loop;
  std::vector<std::string> checked;
  Outcome outcome;
  auto attempt = connect(loop,
                         {"multi.test", 0, {ipv4("127.0.0.2", server.port), ipv4("127.0.0.1", closed.port),
                                            ipv4("127.0.0.1", server.port)}},
                         [&](const sockaddr_storage& address) -> Result<void> {
                           checked.push_back(format_address(address));
                           if (format_address(address).rfind("127.0.0.2:", 0) == 0)
                             return lockroom::make_error(ErrorCode::kInvalidInput, "not allowed");
                           return {};
                         },
                         outcome);
  run_until(loop, [&] { return outcome.done(); });
  // Port 0 is refused before anything is checked.
  CHECK(outcome.error() == "port 0 of multi.test cannot be connected to");
  CHECK(checked.empty());
  attempt.reset();

  outcome.result.reset();
  attempt = connect(loop,
                    {"multi.test", server.port, {ipv4("127.0.0.2", server.port), ipv4("127.0.0.1", closed.port),
                                                 ipv4("127.0.0.1", server.port)}},
                    [&](const sockaddr_storage& address) -> Result<void> {
                      checked.push_back(format_address(address));
                      if (format_address(address).rfind("127.0.0.2:", 0) == 0)
                        return lockroom::make_error(ErrorCode::kInvalidInput, "not allowed");
                      return {};
                    },
                    outcome);
  run_until(loop, [&] { return outcome.done(); });
  INFO(outcome.error());
  REQUIRE(outcome.result->ok());
  CHECK(checked.size() == 3);
  CHECK(outcome.result->value()->description() == "127.0.0.1:" + std::to_string(server.port) + " (from multi.test)");
  int peer = server.accept_now();
  CHECK(peer >= 0);
  ::close(peer);
  outcome.result.reset();
  attempt.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream reports every address that failed", "[upstream]") {
  LoopbackSocket closed_a(-1);
  LoopbackSocket closed_b(-1);
  TestLoop loop;
  Outcome outcome;
  auto attempt = connect(loop, {"down.test", 443, {ipv4("127.0.0.1", closed_a.port), ipv4("127.0.0.1", closed_b.port)}},
                         allow_all, outcome);
  run_until(loop, [&] { return outcome.done(); });
  REQUIRE_FALSE(outcome.result->ok());
  CHECK(outcome.result->error().code == ErrorCode::kUnavailable);
  CHECK(outcome.error() == "cannot connect to down.test port 443: connect to 127.0.0.1:" + std::to_string(closed_a.port) +
                               " (from down.test) failed: connection refused; connect to 127.0.0.1:" +
                               std::to_string(closed_b.port) + " (from down.test) failed: connection refused");
  attempt.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream connect times out on a listener whose backlog is full", "[upstream]") {
  LoopbackSocket server(0);
  // Backlog 0 holds one unaccepted connection; after it the kernel drops further SYNs, so a
  // connect neither completes nor fails: a black hole on loopback.
  int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage address = ipv4("127.0.0.1", server.port);
  REQUIRE(::connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof(sockaddr_in)) == 0);

  TestLoop loop;
  Outcome outcome;
  ConnectOptions options;
  options.timeout = std::chrono::milliseconds(150);
  auto started = std::chrono::steady_clock::now();
  auto attempt = connect(loop, {"127.0.0.1", server.port, {}}, allow_all, outcome, options);
  run_until(loop, [&] { return outcome.done(); });
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(outcome.error() == "connect to 127.0.0.1:" + std::to_string(server.port) + " timed out after 150 ms");
  CHECK(took >= std::chrono::milliseconds(100));  // libuv timers run on a cached millisecond clock
  CHECK(took < std::chrono::seconds(3));
  attempt.reset();
  ::close(filler);
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream reports a name that does not resolve", "[upstream]") {
  TestLoop loop;
  bool checked = false;
  Outcome outcome;
  auto attempt = connect(loop, {"nosuch.invalid", 443, {}},
                         [&](const sockaddr_storage&) -> Result<void> {
                           checked = true;
                           return {};
                         },
                         outcome);
  run_until(loop, [&] { return outcome.done(); });
  REQUIRE_FALSE(outcome.result->ok());
  CHECK(outcome.result->error().code == ErrorCode::kNotFound);
  CHECK(outcome.error() == "no address for nosuch.invalid");
  CHECK_FALSE(checked);
  attempt.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("upstream attempt destroyed early never calls back and leaves nothing open", "[upstream]") {
  LoopbackSocket server(0);
  int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage address = ipv4("127.0.0.1", server.port);
  REQUIRE(::connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof(sockaddr_in)) == 0);
  TestLoop loop;
  Outcome outcome;

  SECTION("while resolving") {
    auto attempt = connect(loop, {"localhost", server.port, {}}, allow_all, outcome);
    uv_run(loop.get(), UV_RUN_NOWAIT);  // the resolution starts
    attempt.reset();
  }
  SECTION("while connecting") {
    auto attempt = connect(loop, {"127.0.0.1", server.port, {}}, allow_all, outcome);
    for (int i = 0; i < 10 && !outcome.done(); ++i) uv_run(loop.get(), UV_RUN_NOWAIT);
    attempt.reset();
  }
  SECTION("before it began") {
    auto attempt = connect(loop, {"127.0.0.1", server.port, {}}, allow_all, outcome);
    attempt.reset();
  }
  CHECK(loop.finish() == 0);
  CHECK_FALSE(outcome.done());
  ::close(filler);
}

TEST_CASE("upstream formats IPv6 addresses in brackets", "[upstream]") {
  sockaddr_storage storage{};
  auto& address = reinterpret_cast<sockaddr_in6&>(storage);
  address.sin6_family = AF_INET6;
  address.sin6_port = htons(8443);
  inet_pton(AF_INET6, "2001:db8::1", &address.sin6_addr);
  CHECK(format_address(storage) == "[2001:db8::1]:8443");
  CHECK(format_address(ipv4("192.0.2.1", 443)) == "192.0.2.1:443");
}
