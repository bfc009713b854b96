// Egress inside the guest, the pure parts: the agent's SOCKS5 handshake, its DNS refusal, the
// net.* channel messages read as hostile input, and where the proxy ports come from (kernel
// command line, flags). No agent process. (The real agent: test_agent_net_relay.cpp; a lying
// agent: test_agent_net_hostile.cpp.)
#include <catch2/catch.hpp>

#include "guest/net_dns.h"
#include "guest/net_socks.h"
#include "guest/settings.h"
#include "tests/unit/channel/channel_harness.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
using protocol::json;

namespace {

std::string socks_domain_request(const std::string& host, int port) {
  return bytes({5, 1, 0, 3, static_cast<int>(host.size())}) + host + bytes({port >> 8, port & 0xff});
}

}  // namespace

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
  // The program behind it: a pid (and the agent-started ancestor) in range, a printable,
  // bounded command that comes only with a pid.
  json with_process = ok;
  with_process["client"] = {{"port", 40000}, {"pid", 231}, {"command", "curl https://example.com/"}, {"started", 230}};
  auto process = wire::parse_net_connection(with_process);
  REQUIRE(process);
  CHECK(process->client_pid == 231);
  CHECK(process->client_command == "curl https://example.com/");
  CHECK(process->client_started == 230);
  CHECK(wire::to_json(*process) == with_process);
  auto client_broken = [&](json client) {
    json j = ok;
    j["client"] = std::move(client);
    auto r = wire::parse_net_connection(j);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK_THAT(client_broken({{"port", 1}, {"pid", 0}, {"command", "x"}}), Catch::Contains("pid"));
  CHECK_THAT(client_broken({{"port", 1}, {"pid", 5000000}, {"command", "x"}}), Catch::Contains("pid"));
  CHECK_THAT(client_broken({{"port", 1}, {"pid", 7}, {"command", "a\x1b[31mred"}}), Catch::Contains("printable ASCII"));
  CHECK_THAT(client_broken({{"port", 1}, {"pid", 7}, {"command", std::string(257, 'a')}}), Catch::Contains("the limit is 256"));
  CHECK_THAT(client_broken({{"port", 1}, {"command", "curl"}}), Catch::Contains("only with a pid"));
  CHECK_THAT(client_broken({{"port", 1}, {"pid", 7}, {"command", "x"}, {"started", -1}}), Catch::Contains("started"));
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
