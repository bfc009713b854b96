// Egress inside the guest, end to end: the real lockroom-agent on the host with its proxies on
// free loopback ports, TCP clients playing the guest's programs, and GuestConnections on the host
// side of the channel: bytes and half-closes both ways, large transfers under credit (in order,
// with a slow program), resets, SOCKS5, the bounds on connections, the proxy variables of started
// processes and the DNS refuser.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "guest/net_socks.h"
#include "server/core/guest_connection_stream.h"
#include "tests/unit/channel/channel_harness.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
using protocol::json;

namespace {

// A program in the guest: a non-blocking TCP client of one of the agent's ports.
struct Client {
  int fd = -1;
  std::string got;
  bool eof = false;
  bool reset = false;

  // `receive_buffer`: a small one makes the agent's writes to this program stop short.
  explicit Client(std::int64_t port, int receive_buffer = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (receive_buffer) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~Client() {
    if (fd >= 0) ::close(fd);
  }
  void send(const std::string& data) { REQUIRE(::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size())); }
  // Reads what is there; true once `want` bytes have arrived or the connection ended.
  bool pump(std::size_t want = SIZE_MAX) {
    char buf[65536];
    while (!eof && !reset) {
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        got.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) eof = true;
      if (n < 0 && errno == ECONNRESET) reset = true;
      break;
    }
    return got.size() >= want || eof || reset;
  }
  void abort() {
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
    fd = -1;
  }
};

// What the host saw of one connection.
struct Seen {
  std::unique_ptr<channel::GuestConnection> connection;
  std::string data;
  bool ended = false;
  std::optional<std::uint32_t> reset_code;
  std::string reset_reason;
};

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lockroom-net-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()));
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// A real agent with its proxies on free ports, networking enabled, connections recorded.
struct Net {
  TempDir certs;
  // A cert dir whose parents do not exist yet, as in the default image (no /etc/ssl at all).
  AgentHarness h;
  wire::NetEnableResult ports;
  std::vector<std::shared_ptr<Seen>> seen;

  explicit Net(std::optional<std::int64_t> max_connections = std::nullopt, bool enable = true, channel::ChannelOptions options = {})
      : h({"--net-http-port", "0", "--net-socks-port", "0", "--net-dns-port", "0", "--net-cert-dir", (certs.path / "ssl" / "certs").string()},
          options) {
    REQUIRE(h.hello);
    h.client->on_connection([this](std::unique_ptr<channel::GuestConnection> c) {
      auto s = std::make_shared<Seen>();
      s->connection = std::move(c);
      Seen* raw = s.get();
      raw->connection->set_callbacks({
          [raw](std::string_view b) { raw->data.append(b); },
          [raw] { raw->ended = true; },
          [raw](std::uint32_t code, const std::string& reason) {
            raw->reset_code = code;
            raw->reset_reason = reason;
          },
          nullptr,
      });
      seen.push_back(s);
    });
    if (enable) this->enable(max_connections);
  }
  void enable(std::optional<std::int64_t> max_connections = std::nullopt) {
    std::optional<Result<wire::NetEnableResult>> result;
    wire::NetEnableParams params;
    params.max_connections = max_connections;
    h.client->enable_network(params, [&](Result<wire::NetEnableResult> r) { result = std::move(r); });
    REQUIRE(h.loop.run_until([&] { return result.has_value(); }));
    REQUIRE(*result);
    ports = **result;
  }
  Seen& wait_connection(std::size_t index) {
    REQUIRE(h.loop.run_until([&] { return seen.size() > index; }, 5s));
    return *seen[index];
  }
  void wait_bytes(Client& c, std::size_t want) { REQUIRE(h.loop.run_until([&] { return c.pump(want); }, 5s)); }
  void wait_end(Client& c) { REQUIRE(h.loop.run_until([&] { return c.pump() && (c.eof || c.reset); }, 5s)); }
  std::string output_of(std::vector<std::string> args, std::vector<std::pair<std::string, std::optional<std::string>>> env = {}) {
    auto params = argv(std::move(args));
    params.env = std::move(env);
    auto run = run_process(h, params);
    REQUIRE(run->exit);
    return run->out;
  }
};

// A pattern that shows a lost, doubled or reordered piece (its period, 251, divides no chunk size).
std::string pattern(std::size_t size, int seed) {
  std::string out(size, '\0');
  for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 7 + static_cast<std::size_t>(seed)) % 251);
  return out;
}

std::string socks_domain_request(const std::string& host, int port) {
  return bytes({5, 1, 0, 3, static_cast<int>(host.size())}) + host + bytes({port >> 8, port & 0xff});
}

}  // namespace

TEST_CASE("net: nothing listens before net.enable, the result names the bound ports", "[channel][net][e2e]") {
  Net n(std::nullopt, false);
  CHECK(n.output_of({"sh", "-c", "echo \"[$HTTP_PROXY]\""}) == "[]\n");
  n.enable();
  CHECK(n.ports.http > 0);
  CHECK(n.ports.socks > 0);
  CHECK(n.ports.dns > 0);
  CHECK(n.ports.max_connections == 256);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: an HTTP proxy connection carries bytes and half-closes both ways", "[channel][net][e2e]") {
  Net n;
  Client c(n.ports.http);
  std::string request = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n";
  c.send(request);
  Seen& s = n.wait_connection(0);
  CHECK(s.connection->kind() == wire::NetKind::kHttp);
  CHECK_FALSE(s.connection->target());
  CHECK(s.connection->client_port() > 0);
  CHECK(s.connection->stream() % 2 == 0);
  REQUIRE(n.h.loop.run_until([&] { return s.data.size() >= request.size(); }, 5s));
  CHECK(s.data == request);  // unparsed: the host reads the request itself

  std::string answer = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
  REQUIRE(s.connection->write(answer));
  n.wait_bytes(c, answer.size());
  CHECK(c.got == answer);

  ::shutdown(c.fd, SHUT_WR);  // the program is done sending
  REQUIRE(n.h.loop.run_until([&] { return s.ended; }, 5s));
  REQUIRE(s.connection->write("more after the client's EOF"));  // the other direction still flows
  n.wait_bytes(c, answer.size() + 27);
  s.connection->close_write();
  n.wait_end(c);
  CHECK(c.eof);
  CHECK_FALSE(s.reset_code);
  REQUIRE(n.h.loop.run_until([&] { return n.h.client->open_connections() == 0 && n.h.channel->session().stream_count() == 0; }, 5s));
  CHECK_FALSE(n.h.failure);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: the announcement names the program that connected, and the one the agent started", "[channel][net][e2e]") {
  Net n;
  // This test process connects: its pid and command line; the agent did not start it.
  Client c(n.ports.http);
  c.send("GET http://example.com/ HTTP/1.1\r\n\r\n");
  Seen& s = n.wait_connection(0);
  auto self = s.connection->client_process();
  REQUIRE(self);
  CHECK(self->pid == ::getpid());
  std::ifstream cmdline("/proc/self/cmdline");
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  CHECK(self->command.rfind(argv0, 0) == 0);
  CHECK_FALSE(self->started);
  for (unsigned char ch : self->command) CHECK((ch >= 0x20 && ch < 0x7f));

  // A program the agent started (bash, through sh) connects: its ancestor sh is `started`.
  const std::string script = "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(n.ports.http) +
                             "; printf 'GET http://example.com/ HTTP/1.1\\r\\n\\r\\n' >&3; sleep 1; :";  // not exec-ed into sleep: bash stays
  auto params = argv({"sh", "-c", "bash -c \"$1\"; echo done", "sh", script});
  auto run = run_process(n.h, params);
  REQUIRE(run->exit);
  CHECK(run->out == "done\n");
  Seen& t = n.wait_connection(1);
  auto child = t.connection->client_process();
  REQUIRE(child);
  INFO(child->command);
  CHECK(child->command.rfind("bash -c exec 3<>/dev/tcp/127.0.0.1/", 0) == 0);
  REQUIRE(child->started);
  CHECK(*child->started == run->pid);
  CHECK(child->pid != run->pid);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: a large transfer flows both ways under credit, in order", "[channel][net][e2e]") {
  Net n;
  Client c(n.ports.http, 8192);
  const std::string up = pattern(1u << 20, 3);  // program → host, many windows
  c.send(up.substr(0, 1));
  Seen& s = n.wait_connection(0);
  const std::string down = pattern(3u << 20, 5);  // host → program, many windows
  std::size_t written = 0, sent_up = 1;
  bool refused = false;
  s.connection->set_callbacks({[&](std::string_view b) { s.data.append(b); }, [&] { s.ended = true; }, nullptr,
                               [&] { refused = false; }});
  REQUIRE(n.h.loop.run_until([&] {
    // The host writes odd-sized chunks as fast as the channel takes them (some framed at once,
    // some queued behind the credit); a refused write is retried whole after on_writable.
    while (!refused && written < down.size()) {
      std::size_t chunk = std::min<std::size_t>(50'000, down.size() - written);
      if (!s.connection->write(std::string_view(down).substr(written, chunk))) {
        refused = true;
        break;
      }
      written += chunk;
    }
    // The program sends its part without blocking, and reads slowly: a little per turn, so the
    // agent's socket fills and it keeps what the socket did not take.
    if (sent_up < up.size()) {
      ssize_t n_up = ::send(c.fd, up.data() + sent_up, std::min<std::size_t>(30'000, up.size() - sent_up), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n_up > 0) sent_up += static_cast<std::size_t>(n_up);
    }
    char buf[7000];
    for (int i = 0; i < 8; ++i) {
      ssize_t got = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (got <= 0) break;
      c.got.append(buf, static_cast<std::size_t>(got));
    }
    return c.got.size() >= down.size() && s.data.size() >= up.size();
  }, 60s));
  CHECK(c.got.size() == down.size());
  CHECK(c.got == down);
  CHECK(s.data.size() == up.size());
  CHECK(s.data == up);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: the host's stream queue takes a write whole or not at all", "[channel][net][e2e]") {
  channel::ChannelOptions options;
  options.max_stream_queue = 100'000;
  Net n(std::nullopt, true, options);
  Client c(n.ports.http, 8192);
  c.send("x");
  Seen& s = n.wait_connection(0);
  bool writable = false;
  s.connection->set_callbacks({[&](std::string_view b) { s.data.append(b); }, [&] { s.ended = true; }, nullptr,
                               [&] { writable = true; }});
  const std::string first = pattern(300'000, 1), second = pattern(80'000, 2);
  // 300,000 bytes: one window (256 KiB) framed at once, the rest queued (under 100,000).
  REQUIRE(s.connection->write(first));
  // 80,000 more would make the queue 117,856: refused whole, nothing of it taken.
  auto refused = s.connection->write(second);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kLimitExceeded);
  REQUIRE(n.h.loop.run_until([&] { return c.pump(first.size()) && writable; }, 10s));
  REQUIRE(s.connection->write(second));
  n.wait_bytes(c, first.size() + second.size());
  CHECK(c.got == first + second);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: GuestConnectionStream takes every write, sends in order and lingers for the rest", "[channel][net][e2e]") {
  Net n;
  Client c(n.ports.http, 8192);
  c.send("x");
  Seen& s = n.wait_connection(0);
  auto stream = std::make_unique<core::GuestConnectionStream>(std::move(s.connection));
  int writable = 0;
  stream->set_callbacks({[](std::string_view) {}, [] {}, [](const std::string&) {}, [&] { ++writable; }});
  const std::string body = pattern(3u << 20, 9);
  bool said_wait = false;
  for (std::size_t at = 0; at < body.size(); at += 50'000) said_wait |= !stream->write(std::string_view(body).substr(at, 50'000));
  CHECK(said_wait);  // 3 MiB is more than the window and the channel's queue
  CHECK(stream->buffered_bytes() > 0);
  // The engine is done with it: the half-close goes after every byte, with the stream gone.
  stream->close_write();
  stream.reset();
  c.send("y");
  ::shutdown(c.fd, SHUT_WR);  // the program closes too, so the lingering connection can end
  REQUIRE(n.h.loop.run_until([&] { return c.pump() && c.eof; }, 20s));
  CHECK(c.got.size() == body.size());
  CHECK(c.got == body);
  CHECK(writable == 0);  // nobody to tell after the stream went
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: a reset crosses in both directions", "[channel][net][e2e]") {
  Net n;
  SECTION("the host resets: the program sees a reset") {
    Client c(n.ports.http);
    c.send("GET http://example.com/ HTTP/1.1\r\n\r\n");
    Seen& s = n.wait_connection(0);
    s.connection->reset("denied by policy");
    n.wait_end(c);
    CHECK(c.reset);
    REQUIRE(n.h.loop.run_until([&] { return n.h.channel->session().stream_count() == 0; }, 5s));
  }
  SECTION("the program resets: the host sees RESET with the errno text") {
    Client c(n.ports.http);
    c.send("CONNECT example.com:443 HTTP/1.1\r\n\r\n");
    Seen& s = n.wait_connection(0);
    REQUIRE(n.h.loop.run_until([&] { return !s.data.empty(); }, 5s));
    c.abort();
    REQUIRE(n.h.loop.run_until([&] { return s.reset_code.has_value(); }, 5s));
    CHECK(*s.reset_code == wire::reset_code::kIoError);
    CHECK_THAT(s.reset_reason, Catch::Contains("reset"));
    CHECK(n.h.client->open_connections() == 0);
  }
  CHECK_FALSE(n.h.failure);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: SOCKS5 with a domain target, accepted, carries bytes", "[channel][net][e2e]") {
  Net n;
  Client c(n.ports.socks);
  c.send(bytes({5, 1, 0}));
  n.wait_bytes(c, 2);
  CHECK(c.got == bytes({5, 0}));
  c.send(socks_domain_request("example.com", 443));
  Seen& s = n.wait_connection(0);
  CHECK(s.connection->kind() == wire::NetKind::kSocks);
  REQUIRE(s.connection->target());
  CHECK(s.connection->target()->host == "example.com");
  CHECK(s.connection->target()->port == 443);
  CHECK_FALSE(s.connection->write("too early"));  // the verdict comes first
  REQUIRE(s.connection->accept());
  CHECK_FALSE(s.connection->accept());
  REQUIRE(s.connection->write("server hello"));
  n.wait_bytes(c, 2 + 10 + 12);
  CHECK(c.got.substr(2, 10) == agent::socks_reply(0));
  CHECK(c.got.substr(12) == "server hello");
  c.send("client hello");
  REQUIRE(n.h.loop.run_until([&] { return s.data == "client hello"; }, 5s));
  CHECK_FALSE(n.h.failure);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: SOCKS5 refused gets the host's reply code", "[channel][net][e2e]") {
  Net n;
  Client c(n.ports.socks);
  c.send(bytes({5, 1, 0, 5, 1, 0, 1, 10, 1, 2, 3, 0, 80}));
  Seen& s = n.wait_connection(0);
  REQUIRE(s.connection->target());
  CHECK(s.connection->target()->host == "10.1.2.3");
  CHECK(s.connection->target()->port == 80);
  REQUIRE(s.connection->refuse("10.1.2.3 is not in the allow list", wire::socks_reply::kNotAllowed));
  n.wait_end(c);
  REQUIRE(c.got.size() == 12);
  CHECK(c.got.substr(2) == agent::socks_reply(2));  // "connection not allowed by ruleset"
  CHECK(n.h.client->open_connections() == 0);
  REQUIRE(n.h.loop.run_until([&] { return n.h.channel->session().stream_count() == 0; }, 5s));
  CHECK_FALSE(n.h.failure);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: the agent refuses connections over its bound at once", "[channel][net][e2e]") {
  Net n(2);
  CHECK(n.ports.max_connections == 2);
  Client a(n.ports.http), b(n.ports.http);
  a.send("a");
  b.send("b");
  n.wait_connection(1);
  Client c(n.ports.http);
  n.wait_end(c);  // closed with RST, never announced
  CHECK(n.seen.size() == 2);
  n.seen[0]->connection->reset("done");
  REQUIRE(n.h.loop.run_until([&] { return a.pump() && a.reset; }, 5s));
  Client d(n.ports.http);  // room again
  d.send("d");
  n.wait_connection(2);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: the host resets connections over its own bound", "[channel][net][e2e]") {
  Net n;
  n.h.client->set_max_connections(1);
  Client a(n.ports.http), b(n.ports.http);
  a.send("a");
  b.send("b");
  n.wait_connection(0);
  n.wait_end(b);
  CHECK(b.reset);
  CHECK(n.seen.size() == 1);
  CHECK(n.h.client->open_connections() == 1);
  CHECK_FALSE(n.h.failure);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: started processes get the proxy and CA variables unless they set them", "[channel][net][e2e]") {
  Net n;
  std::string port = std::to_string(n.ports.http);
  CHECK(n.output_of({"sh", "-c", "echo $HTTPS_PROXY"}) == "http://127.0.0.1:" + port + "\n");
  CHECK(n.output_of({"sh", "-c", "echo $http_proxy $ALL_PROXY $all_proxy"}) ==
        "http://127.0.0.1:" + port + " socks5h://127.0.0.1:" + std::to_string(n.ports.socks) + " socks5h://127.0.0.1:" +
            std::to_string(n.ports.socks) + "\n");
  CHECK(n.output_of({"sh", "-c", "echo $NO_PROXY $no_proxy"}) == "localhost,127.0.0.1,::1 localhost,127.0.0.1,::1\n");
  CHECK(n.output_of({"sh", "-c", "echo $HTTPS_PROXY+$HTTP_PROXY"}, {{"HTTPS_PROXY", "http://mine:1"}, {"HTTP_PROXY", std::nullopt}}) ==
        "http://mine:1+\n");

  std::string pem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
  std::optional<Result<wire::NetTrustResult>> trusted;
  n.h.client->trust_certificate(pem, [&](Result<wire::NetTrustResult> r) { trusted = std::move(r); });
  REQUIRE(n.h.loop.run_until([&] { return trusted.has_value(); }));
  REQUIRE(*trusted);
  CHECK((*trusted)->certificate == (n.certs.path / "ssl" / "certs" / "lockroom-ca.pem").string());
  std::ifstream ca((*trusted)->certificate);
  std::stringstream text;
  text << ca.rdbuf();
  CHECK(text.str() == pem);
  std::string bundle = (*trusted)->bundle;
  CHECK(n.output_of({"sh", "-c", "echo $SSL_CERT_FILE $REQUESTS_CA_BUNDLE $GIT_SSL_CAINFO $CURL_CA_BUNDLE $NODE_EXTRA_CA_CERTS"}) ==
        bundle + " " + bundle + " " + bundle + " " + bundle + " " + (*trusted)->certificate + "\n");
  CHECK(n.output_of({"sh", "-c", "tail -c " + std::to_string(pem.size()) + " \"$SSL_CERT_FILE\""}) == pem);

  std::optional<Result<wire::NetTrustResult>> key;
  n.h.client->trust_certificate("-----BEGIN RSA PRIVATE KEY-----\n", [&](Result<wire::NetTrustResult> r) { key = std::move(r); });
  REQUIRE(n.h.loop.run_until([&] { return key.has_value(); }));
  REQUIRE_FALSE(*key);
  CHECK((*key).error().code == ErrorCode::kInvalidInput);
  CHECK(n.h.shutdown() == 0);
}

TEST_CASE("net: the DNS refuser answers at once", "[channel][net][e2e]") {
  Net n;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(n.ports.dns));
  std::string query = bytes({0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 7}) + "example" + bytes({3}) + "com" + bytes({0, 0, 1, 0, 1});
  REQUIRE(::sendto(fd, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == static_cast<ssize_t>(query.size()));
  char buf[512];
  ssize_t got = -1;
  REQUIRE(n.h.loop.run_until([&] {
    got = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    return got > 0;
  }, 5s));
  ::close(fd);
  REQUIRE(got == static_cast<ssize_t>(query.size()));
  CHECK(std::string(buf, 2) == query.substr(0, 2));
  CHECK((buf[3] & 0x0f) == 5);
  CHECK(n.h.shutdown() == 0);
}
