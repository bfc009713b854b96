// Forward-proxy edge cases: pipelined requests, a policy changed on a running proxy, a sentinel
// split across chunks of a chunked body, an upstream that hangs up without answering, and an
// absolute-form https:// URL (the proxy makes the TLS connection upstream and verifies it).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <thread>

#include "tests/unit/egress_engine/engine_test_support.h"
#include "tests/unit/egress_tls/https_test_server.h"

using namespace lockroom::egress;
using namespace lockroom::testing;

namespace {

constexpr const char* kLoopbackPolicy = R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"defaultAllow":false})";

std::string get(std::uint16_t port, const std::string& path) {
  return "GET http://127.0.0.1:" + std::to_string(port) + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

}  // namespace

TEST_CASE("pipelined requests are answered in order", "[proxy][http]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(kLoopbackPolicy);
  ProxyHarness harness(std::move(options));
  HttpAnswer first, second;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/a") + get(server->port(), "/b"));  // one write, two requests
    ReadFn read = socket_reader(fd);
    // Both answers may arrive in one read: collect them, then parse byte by byte so the first
    // parse stops exactly where the second answer starts.
    std::string surplus;
    ReadFn buffered = [&](char* buffer, std::size_t) -> long {
      if (surplus.empty()) return 0;
      buffer[0] = surplus[0];
      surplus.erase(0, 1);
      return 1;
    };
    std::string all;
    while (all.find("hello GET /b\n") == std::string::npos) {
      char chunk[4096];
      long got = read(chunk, sizeof chunk);
      if (got <= 0) break;
      all.append(chunk, static_cast<std::size_t>(got));
    }
    surplus = all;
    first = read_answer(buffered);
    second = read_answer(buffered);
  });
  CHECK(first.body == "hello GET /a\n");
  CHECK(second.body == "hello GET /b\n");
  CHECK(harness.events.size() == 2);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("set_policy on a running proxy decides the next request", "[proxy][http]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(kLoopbackPolicy);
  ProxyHarness harness(std::move(options));
  HttpAnswer before, after;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/before"));
    before = read_answer(socket_reader(fd));
  });
  harness.proxy().set_policy(policy_from(R"({"rules":[{"action":"deny","host":"127.0.0.1","name":"now-closed"}],"defaultAllow":false})"));
  CHECK(harness.proxy().policy().rules.at(0).name == "now-closed");
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/after"));
    after = read_answer(socket_reader(fd));
  });
  CHECK(before.status == 200);
  CHECK(after.status == 403);
  CHECK(after.body.find("(rule: now-closed)") != std::string::npos);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("a sentinel split across chunks of a chunked body is caught", "[proxy][http][secrets]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(kLoopbackPolicy);
  auto secrets = parse_secrets(json::parse(R"([{"name":"api_token","from":{"env":"UNUSED"},"hosts":["api.example.com"]}])"));
  REQUIRE(secrets.ok());
  options.secrets = secrets.value();
  options.secret_values = {{"api_token", "real-value-123"}};
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, "POST http://127.0.0.1:" + std::to_string(server->port()) +
                     "/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "c\r\nLOCKROOM_SEC\r\nd\r\nRET_API_TOKEN\r\n0\r\n\r\n");
    answer = read_answer(socket_reader(fd));
  });
  CHECK(answer.status == 403);
  CHECK(answer.body.find("sentinel of secret api_token") != std::string::npos);
  for (const std::string& request : server->received()) CHECK(request.find("RET_API_TOKEN") == std::string::npos);
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].decision == "block");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("an upstream that hangs up without answering gives 502", "[proxy][http]") {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(listener, 4) == 0);
  REQUIRE(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  std::thread rude([listener] {
    int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    char buffer[4096];
    [[maybe_unused]] ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    ::close(fd);
  });
  ProxyOptions options;
  options.policy = policy_from(kLoopbackPolicy);
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, get(ntohs(address.sin_port), "/"));
    answer = read_answer(socket_reader(fd));
  });
  rude.join();
  ::close(listener);
  CHECK(answer.status == 502);
  CHECK(answer.body.find("without answering") != std::string::npos);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("an absolute-form https URL is fetched over verified TLS upstream", "[proxy][http][tls]") {
  std::string error;
  auto server = HttpsTestServer::start({}, &error);
  INFO(error);
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(kLoopbackPolicy);
  options.upstream_tls.extra_ca_files = {server->ca_file()};
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, "GET https://127.0.0.1:" + std::to_string(server->port()) + "/secure HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    answer = read_answer(socket_reader(fd));
  });
  CHECK(answer.status == 200);
  CHECK(answer.body == "hello from the test server\n");
  CHECK(server->last_request().rfind("GET /secure HTTP/1.1\r\n", 0) == 0);
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].scheme == "https");
  CHECK(harness.close_all() == 0);
}
