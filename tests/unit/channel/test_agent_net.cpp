// Egress inside the guest, end to end: the real lockroom-agent on the host with its proxies on
// free loopback ports, TCP clients playing the guest's programs, and GuestConnections on the host
// side of the channel. Also the pure parts (SOCKS handshake, DNS refusal, net.* messages) and a
// scripted lying agent that announces streams it never opened.
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

#include "guest/net_dns.h"
#include "guest/net_socks.h"
#include "guest/settings.h"
#include "tests/fakes/lying_agent.h"
#include "tests/unit/channel/channel_harness.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
using protocol::json;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

// A program in the guest: a non-blocking TCP client of one of the agent's ports.
struct Client {
  int fd = -1;
  std::string got;
  bool eof = false;
  bool reset = false;

  explicit Client(std::int64_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  AgentHarness h{{"--net-http-port", "0", "--net-socks-port", "0", "--net-dns-port", "0", "--net-cert-dir", (certs.path / "ssl" / "certs").string()}};
  wire::NetEnableResult ports;
  std::vector<std::shared_ptr<Seen>> seen;

  explicit Net(std::optional<std::int64_t> max_connections = std::nullopt, bool enable = true) {
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

std::string socks_domain_request(const std::string& host, int port) {
  return bytes({5, 1, 0, 3, static_cast<int>(host.size())}) + host + bytes({port >> 8, port & 0xff});
}

}  // namespace

// ---- pure parts

TEST_CASE("net: the SOCKS5 handshake names IPv4, IPv6 and domain targets", "[channel][net]") {
  SECTION("greeting and domain request in one read, with bytes behind it") {
    agent::SocksHandshake s;
    auto out = s.feed(bytes({5, 2, 2, 0}) + socks_domain_request("example.com", 443) + "early");
    CHECK(out.step == agent::SocksHandshake::Step::kTarget);
    CHECK(out.reply == bytes({5, 0}));
    REQUIRE(out.target);
    CHECK(out.target->host == "example.com");
    CHECK(out.target->port == 443);
    CHECK(out.extra == "early");
  }
  SECTION("byte by byte, IPv6") {
    agent::SocksHandshake s;
    std::string all = bytes({5, 1, 0}) + bytes({5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80});
    agent::SocksHandshake::Outcome out;
    std::string replies;
    for (char c : all) {
      out = s.feed(std::string(1, c));
      replies += out.reply;
    }
    CHECK(replies == bytes({5, 0}));
    REQUIRE(out.target);
    CHECK(out.target->host == "2001:db8::1");
    CHECK(out.target->port == 80);
  }
  SECTION("IPv4") {
    agent::SocksHandshake s;
    auto out = s.feed(bytes({5, 1, 0, 5, 1, 0, 1, 10, 1, 2, 3, 0x1f, 0x90}));
    REQUIRE(out.target);
    CHECK(out.target->host == "10.1.2.3");
    CHECK(out.target->port == 8080);
  }
}

TEST_CASE("net: the SOCKS5 handshake refuses what it does not offer", "[channel][net]") {
  using Step = agent::SocksHandshake::Step;
  SECTION("BIND gets 0x07") {
    agent::SocksHandshake s;
    auto out = s.feed(bytes({5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80}));
    CHECK(out.step == Step::kFail);
    CHECK(out.reply == bytes({5, 0}) + agent::socks_reply(7));
  }
  SECTION("UDP ASSOCIATE gets 0x07") {
    agent::SocksHandshake s;
    s.feed(bytes({5, 1, 0}));
    CHECK(s.feed(bytes({5, 3, 0, 1, 0, 0, 0, 0, 0, 0})).reply == agent::socks_reply(7));
  }
  SECTION("an unknown address type gets 0x08") {
    agent::SocksHandshake s;
    s.feed(bytes({5, 1, 0}));
    auto out = s.feed(bytes({5, 1, 0, 9, 0}));
    CHECK(out.step == Step::kFail);
    CHECK(out.reply == agent::socks_reply(8));
  }
  SECTION("a client that wants authentication gets 0xFF") {
    agent::SocksHandshake s;
    auto out = s.feed(bytes({5, 1, 2}));
    CHECK(out.step == Step::kFail);
    CHECK(out.reply == bytes({5, 0xff}));
  }
  SECTION("SOCKS4 and overlong input end without a reply") {
    agent::SocksHandshake four;
    CHECK(four.feed(bytes({4, 1, 0, 80})).step == Step::kFail);
    agent::SocksHandshake flood;
    CHECK(flood.feed(std::string(agent::SocksHandshake::kMaxBuffered + 1, '\5')).step == Step::kFail);
  }
  SECTION("port 0 and unprintable names are unreachable") {
    agent::SocksHandshake zero;
    zero.feed(bytes({5, 1, 0}));
    CHECK(zero.feed(socks_domain_request("example.com", 0)).reply == agent::socks_reply(4));
    agent::SocksHandshake bad;
    bad.feed(bytes({5, 1, 0}));
    CHECK(bad.feed(socks_domain_request("exa mple", 80)).reply == agent::socks_reply(4));
  }
}

TEST_CASE("net: DNS queries are answered REFUSED with their id and question", "[channel][net]") {
  // id 0xbeef, RD, one question: example.com A IN
  std::string query = bytes({0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 7}) + "example" + bytes({3}) + "com" + bytes({0, 0, 1, 0, 1});
  std::string reply = agent::dns_refusal(query);
  REQUIRE(reply.size() == query.size());
  CHECK(reply.substr(0, 2) == query.substr(0, 2));
  CHECK(static_cast<unsigned char>(reply[2]) == 0x81);  // QR + RD
  CHECK((reply[3] & 0x0f) == 5);                         // REFUSED
  CHECK(reply.substr(12) == query.substr(12));
  CHECK(agent::dns_question_name(query) == "example.com");
  CHECK(agent::dns_refusal("short").empty());
  std::string answer = query;
  answer[2] = static_cast<char>(0x81);
  CHECK(agent::dns_refusal(answer).empty());  // never answer an answer
  std::string cut = query.substr(0, 20);
  CHECK(agent::dns_refusal(cut).size() == 12);  // no readable question: the header alone
}

TEST_CASE("net: net.connection announcements are checked as hostile input", "[channel][net]") {
  json ok = {{"stream", 8}, {"kind", "socks"}, {"target", {{"host", "example.com"}, {"port", 443}}}, {"client", {{"port", 40000}}}};
  auto parsed = wire::parse_net_connection(ok);
  REQUIRE(parsed);
  CHECK(wire::to_json(*parsed) == ok);
  auto broken = [&](const char* key, json value) {
    json j = ok;
    j[key] = std::move(value);
    auto r = wire::parse_net_connection(j);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK_THAT(broken("stream", 9), Catch::Contains("must be even"));
  CHECK_THAT(broken("kind", "udp"), Catch::Contains("\"kind\""));
  CHECK_THAT(broken("target", {{"host", "a\nb"}, {"port", 1}}), Catch::Contains("target.host"));
  CHECK_THAT(broken("target", {{"host", "a"}, {"port", 70000}}), Catch::Contains("target.port"));
  json http = ok;
  http["kind"] = "http";
  CHECK_FALSE(wire::parse_net_connection(http));  // HTTP announces no target
  json socks = ok;
  socks.erase("target");
  CHECK_FALSE(wire::parse_net_connection(socks));
  CHECK_FALSE(wire::parse_net_trust_params(json{{"pem", "-----BEGIN PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----"}}));
  CHECK_FALSE(wire::parse_net_refuse_params(json{{"stream", 2}, {"socksCode", 0}}));
}

TEST_CASE("net: the proxy ports come from the kernel command line and flags", "[channel][net]") {
  agent::AgentSettings settings;
  CHECK(settings.net.http_port == 3128);
  CHECK(settings.net.socks_port == 1080);
  CHECK(settings.net.dns_port == 53);
  agent::apply_kernel_cmdline("quiet lockroom.net.http=8080 lockroom.net.dns=0 lockroom.net.max=16 lockroom.net.socks=0", settings);
  CHECK(settings.net.http_port == 8080);
  CHECK(settings.net.socks_port == 1080);  // 0 is no port a guest listens on: ignored
  CHECK_FALSE(settings.net.dns_port);
  CHECK(settings.net.max_connections == 16);
  REQUIRE(agent::apply_flags({"--net-http-port", "0", "--net-dns-port", "5353", "--net-cert-dir", "/tmp/certs"}, settings));
  CHECK(settings.net.http_port == 0);
  CHECK(settings.net.dns_port == 5353);
  CHECK(settings.net.cert_dir == "/tmp/certs");
  auto bad = agent::apply_flags({"--net-socks-port", "70000"}, settings);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("--net-socks-port needs a port") && Catch::Contains("70000"));
  CHECK_FALSE(agent::apply_flags({"--net-max-connections", "0"}, settings));
  CHECK_FALSE(agent::apply_flags({"--net-cert-dir", "relative"}, settings));
}

// ---- the real agent

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

TEST_CASE("net: a large transfer flows both ways under credit", "[channel][net][e2e]") {
  Net n;
  Client c(n.ports.http);
  c.send("x");
  Seen& s = n.wait_connection(0);
  std::string big(3u << 20, 'b');  // many windows
  std::size_t written = 0;
  s.connection->set_callbacks({[&](std::string_view b) { s.data.append(b); }, [&] { s.ended = true; }, nullptr,
                               [&] {}});
  REQUIRE(n.h.loop.run_until([&] {
    while (written < big.size()) {
      std::size_t chunk = std::min<std::size_t>(64u << 10, big.size() - written);
      if (!s.connection->write(std::string_view(big).substr(written, chunk))) break;
      written += chunk;
    }
    return c.pump(big.size());
  }, 20s));
  CHECK(c.got == big);
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

// ---- a lying agent

namespace {

struct Liar {
  Loop loop;
  std::unique_ptr<channel::GuestChannel> channel;
  std::unique_ptr<LyingAgent> agent;
  std::unique_ptr<channel::AgentClient> client;
  std::optional<Error> failure;
  bool ready = false;
  int connections = 0;

  Liar() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    agent = std::make_unique<LyingAgent>(loop.get(), sv[1]);
    channel = std::make_unique<channel::GuestChannel>(loop.get());
    REQUIRE(channel->start(sv[0], [this](Result<wire::HelloResult> r) { r ? void(ready = true) : void(failure = r.error()); },
                           [this](const Error& e) { failure = e; }));
    REQUIRE(loop.run_until([&] { return ready || failure; }));
    client = std::make_unique<channel::AgentClient>(*channel);
    client->on_connection([this](std::unique_ptr<channel::GuestConnection>) { connections++; });
  }
  // Enables networking; the script runs in place of the agent's answer.
  std::string run(LyingAgent::Script script) {
    agent->on_request(std::move(script));
    client->enable_network({}, [](Result<wire::NetEnableResult>) {});
    REQUIRE(loop.run_until([&] { return failure.has_value(); }, 10s));
    return failure->message;
  }
  int finish() {
    client.reset();
    bool closed = false, agent_closed = false;
    channel->close([&] { closed = true; });
    agent->close([&] { agent_closed = true; });
    loop.run_until([&] { return closed && agent_closed; }, 5s);
    channel.reset();
    agent.reset();
    return loop.finish();
  }
};

json enabled() { return json{{"http", 3128}, {"socks", 1080}, {"dns", 53}, {"maxConnections", 256}}; }
json announce(std::uint32_t stream) { return json{{"stream", stream}, {"kind", "http"}, {"client", {{"port", 40000}}}}; }

}  // namespace

TEST_CASE("net: a lying agent announcing a stream it never opened fails the channel", "[channel][net][hostile]") {
  Liar t;
  std::string why = t.run([](LyingAgent& a, const protocol::Request& r) {
    a.reply(r.id, enabled());
    a.notify(wire::method::kNetConnection, announce(40));
  });
  CHECK_THAT(why, Catch::Contains("net.connection") && Catch::Contains("stream 40 was never opened"));
  CHECK(t.connections == 0);
  CHECK(t.finish() == 0);
}

TEST_CASE("net: a lying agent announcing one stream twice fails the channel", "[channel][net][hostile]") {
  Liar t;
  std::string why = t.run([](LyingAgent& a, const protocol::Request& r) {
    a.reply(r.id, enabled());
    std::uint32_t id = a.open_stream();
    a.notify(wire::method::kNetConnection, announce(id));
    a.notify(wire::method::kNetConnection, announce(id));
  });
  CHECK_THAT(why, Catch::Contains("announced twice"));
  CHECK(t.connections == 1);
  CHECK(t.finish() == 0);
}

TEST_CASE("net: a lying agent announcing an odd stream or a socks connection without target fails the channel", "[channel][net][hostile]") {
  SECTION("odd id") {
    Liar t;
    CHECK_THAT(t.run([](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, enabled());
      a.notify(wire::method::kNetConnection, announce(3));
    }), Catch::Contains("must be even"));
    CHECK(t.finish() == 0);
  }
  SECTION("socks without target") {
    Liar t;
    CHECK_THAT(t.run([](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, enabled());
      json note = announce(a.open_stream());
      note["kind"] = "socks";
      a.notify(wire::method::kNetConnection, note);
    }), Catch::Contains("\"target\" is required"));
    CHECK(t.finish() == 0);
  }
}
