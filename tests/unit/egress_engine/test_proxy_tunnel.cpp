// CONNECT and SOCKS tunnels against the HTTPS test server on loopback: TLS end to end when the
// host has no secret, TLS terminated with the sandbox CA when it has one (the upstream sees the
// real value, the guest only the sentinel), the SNI checked against the policy, SOCKS verdicts.
#include <catch2/catch.hpp>

#include "tests/unit/egress_engine/engine_test_support.h"
#include "tests/unit/egress_tls/https_test_server.h"

using namespace lockroom::egress;
using namespace lockroom::testing;

namespace {

// localhost is allowed by name; its address 127.0.0.1 must be named too for the address gate.
constexpr const char* kLocalhostPolicy =
    R"({"rules":[{"action":"allow","host":"localhost","name":"local-name"},{"action":"allow","host":"127.0.0.1"}],
        "defaultAllow":false})";

std::string connect_request(std::uint16_t port, const std::string& host = "localhost") {
  return "CONNECT " + host + ":" + std::to_string(port) + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) + "\r\n\r\n";
}

std::unique_ptr<HttpsTestServer> start_https() {
  std::string error;
  auto server = HttpsTestServer::start({}, &error);
  INFO(error);
  REQUIRE(server);
  return server;
}

}  // namespace

TEST_CASE("CONNECT to a host without a secret is tunnelled as is: the guest verifies the server's own CA", "[proxy][tunnel]") {
  auto server = start_https();
  ProxyOptions options;
  options.policy = policy_from(kLocalhostPolicy);
  ProxyHarness harness(std::move(options));
  HttpAnswer established, answer;
  std::string tls_error;
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    established = read_answer(socket_reader(fd), "CONNECT");
    TlsTestClient tls(server->ca_pem(), fd, "localhost");
    if (!tls.handshake()) {
      tls_error = tls.error();
      return;
    }
    tls.writer()("GET /through HTTP/1.1\r\nHost: localhost\r\n\r\n");
    answer = read_answer(tls.reader());
  });
  CHECK(established.status == 200);
  INFO(tls_error);
  CHECK(tls_error.empty());
  CHECK(answer.status == 200);
  CHECK(answer.body == "hello from the test server\n");
  CHECK(server->last_sni() == "localhost");
  REQUIRE(harness.events.size() == 1);  // one record for the whole tunnel
  const AuditRecord& record = harness.events[0];
  CHECK(record.decision == "allow");
  CHECK(record.scheme == "https");
  CHECK(record.sni == "localhost");
  CHECK(record.method == "CONNECT");
  CHECK(record.address == "127.0.0.1");
  CHECK(record.bytes_up > 200);
  CHECK(record.bytes_down > 500);
  CHECK_FALSE(record.upstream_status.has_value());
  CHECK(harness.close_all() == 0);
}

TEST_CASE("CONNECT to a host with a secret: TLS is terminated and the upstream gets the real value", "[proxy][tunnel][secrets]") {
  auto server = start_https();
  ProxyOptions options;
  options.policy = policy_from(kLocalhostPolicy);
  auto secrets = parse_secrets(json::parse(R"([{"name":"api_token","from":{"env":"UNUSED"},"hosts":["localhost"]},
      {"name":"other","from":{"env":"UNUSED"},"hosts":["other.example"]}])"));
  REQUIRE(secrets.ok());
  options.secrets = secrets.value();
  options.secret_values = {{"api_token", "real-value-123"}, {"other", "other-value"}};
  options.upstream_tls.extra_ca_files = {server->ca_file()};
  ProxyHarness harness(std::move(options));
  std::string proxy_ca = harness.proxy().ca_certificate_pem();
  CHECK(proxy_ca.find("BEGIN CERTIFICATE") != std::string::npos);

  HttpAnswer answer, blocked;
  std::string tls_error, wrong_ca_error;
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    read_answer(socket_reader(fd), "CONNECT");
    TlsTestClient tls(proxy_ca, fd, "localhost");  // the guest trusts the sandbox CA
    if (!tls.handshake()) {
      tls_error = tls.error();
      return;
    }
    tls.writer()("GET /api HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer LOCKROOM_SECRET_API_TOKEN\r\n\r\n");
    answer = read_answer(tls.reader());
  });
  INFO(tls_error);
  CHECK(answer.status == 200);
  CHECK(answer.body == "hello from the test server\n");
  std::string upstream_saw = server->last_request();
  CHECK(upstream_saw.find("Authorization: Bearer real-value-123") != std::string::npos);
  CHECK(upstream_saw.find("LOCKROOM_SECRET") == std::string::npos);

  // The other secret's sentinel inside the same kind of tunnel is blocked.
  int requests_before = server->requests();
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    read_answer(socket_reader(fd), "CONNECT");
    TlsTestClient tls(proxy_ca, fd, "localhost");
    REQUIRE(tls.handshake());
    tls.writer()("GET /api HTTP/1.1\r\nHost: localhost\r\nX-Other: LOCKROOM_SECRET_OTHER\r\n\r\n");
    blocked = read_answer(tls.reader());
  });
  CHECK(blocked.status == 403);
  CHECK(server->requests() == requests_before);

  // A guest that does not trust the sandbox CA cannot be fooled into talking to it.
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    read_answer(socket_reader(fd), "CONNECT");
    TlsTestClient tls(server->ca_pem(), fd, "localhost");
    if (!tls.handshake()) wrong_ca_error = tls.error();
  });
  CHECK_FALSE(wrong_ca_error.empty());

  REQUIRE(harness.events.size() == 3);
  CHECK(harness.events[2].reason.rfind("TLS with the guest failed: ", 0) == 0);
  const AuditRecord& record = harness.events[0];
  CHECK(record.decision == "allow");
  CHECK(record.scheme == "https");
  CHECK(record.sni == "localhost");
  CHECK(record.method == "GET");
  CHECK(record.path == "/api");
  CHECK(record.upstream_status == 200);
  CHECK(record.secrets == std::vector<std::string>{"api_token"});
  CHECK(harness.events[1].decision == "block");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("a TLS server name the policy denies ends the tunnel and is audited", "[proxy][tunnel]") {
  auto server = start_https();
  ProxyOptions options;
  options.policy = policy_from(kLocalhostPolicy);
  ProxyHarness harness(std::move(options));
  std::string tls_error;
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    read_answer(socket_reader(fd), "CONNECT");
    TlsTestClient tls(server->ca_pem(), fd, "evil.example");
    if (!tls.handshake()) tls_error = tls.error();
  });
  CHECK_FALSE(tls_error.empty());
  CHECK(server->handshakes() == 0);
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].decision == "deny");
  CHECK(harness.events[0].sni == "evil.example");
  CHECK(harness.events[0].reason.find("evil.example") != std::string::npos);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("CONNECT to a denied target is answered 403 before any tunnel", "[proxy][tunnel]") {
  ProxyOptions options;
  options.policy = policy_from(kLocalhostPolicy);
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(443, "example.com"));
    answer = read_answer(socket_reader(fd), "CONNECT");
  });
  CHECK(answer.status == 403);
  CHECK(answer.body == "lockroom: example.com:443 is not allowed by this sandbox's network policy (rule: default): "
                       "no rule allows https example.com:443\n");
  CHECK(answer.head.find("X-Lockroom-Rule: default\r\n") != std::string::npos);
  CHECK(answer.head.find("Proxy-Status: lockroom; error=http_request_denied; details=\"rule default: no rule allows ") !=
        std::string::npos);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("SOCKS: the verdict follows the decision and the connect, then bytes are relayed", "[proxy][socks]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(R"({"rules":[{"action":"allow","host":"127.0.0.1","schemes":["tcp","https"]}],"defaultAllow":false})");
  ProxyHarness harness(std::move(options));
  ProxyHarness::SocksOutcome allowed, denied;
  HttpAnswer answer;
  harness.run_socks("127.0.0.1", server->port(), allowed, [&](int fd) {
    send_all(fd, "GET /raw HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    answer = read_answer(socket_reader(fd));
  });
  CHECK(allowed.called);
  CHECK(allowed.ok);
  CHECK(allowed.reply == 0);
  CHECK(answer.body == "hello GET /raw\n");
  harness.run_socks("example.com", 443, denied, [](int) {});
  CHECK(denied.called);
  CHECK_FALSE(denied.ok);
  CHECK(denied.reply == 2);
  CHECK(denied.reason.find("example.com:443") != std::string::npos);
  REQUIRE(harness.events.size() == 2);
  CHECK(harness.events[0].scheme == "tcp");
  CHECK(harness.events[1].decision == "deny");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("CONNECT that asks: allowed once it tunnels, and a guest that gives up before the answer leaves nothing behind",
          "[proxy][tunnel][approval]") {
  auto server = start_https();
  ProxyOptions options;
  options.policy = policy_from(R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"unmatched":"ask","defaultAllow":false})");
  std::vector<ApprovalReply> pending;
  bool answer_at_once = true;
  options.approve = [&](const ApprovalQuestion& question, ApprovalReply reply) {
    CHECK(question.host == "localhost");
    CHECK(question.method == "CONNECT");
    if (answer_at_once)
      reply(ApprovalAnswer::kAllowOnce);
    else
      pending.push_back(std::move(reply));
  };
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    read_answer(socket_reader(fd), "CONNECT");
    TlsTestClient tls(server->ca_pem(), fd, "localhost");
    REQUIRE(tls.handshake());
    tls.writer()("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    answer = read_answer(tls.reader());
  });
  CHECK(answer.status == 200);
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].rule == "user");

  answer_at_once = false;
  int connections = server->connections();
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    usleep(100 * 1000);
  });
  harness.run_until([&] { return harness.proxy().stats().sessions == 0; });
  CHECK(harness.proxy().stats().sessions == 0);
  REQUIRE(pending.size() == 1);
  pending[0](ApprovalAnswer::kAllowOnce);
  harness.run_until([] { return false; }, std::chrono::milliseconds(200));  // a wrong connect would show
  CHECK(server->connections() == connections);
  CHECK(harness.events.size() == 1);
  CHECK(harness.close_all() == 0);
}
