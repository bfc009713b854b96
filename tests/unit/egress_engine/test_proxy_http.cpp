// The proxy as a forward HTTP proxy, against a real HTTP server on loopback: allowed requests
// relayed and audited, denials with the rule, the private-address gate on the resolved address,
// keep-alive, secrets and sentinels, approvals, backpressure and shutdown.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "server/egress/policy/audit.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/egress_engine/engine_test_support.h"

using namespace lockroom::egress;
using namespace lockroom::testing;

namespace {

std::string get(std::uint16_t port, const std::string& path, const std::string& host = "127.0.0.1",
                const std::string& extra = "") {
  return "GET http://" + host + ":" + std::to_string(port) + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + extra + "\r\n";
}

ProxyOptions options_allowing_loopback() {
  ProxyOptions options;
  options.policy = policy_from(R"({"rules":[{"action":"allow","host":"127.0.0.1","name":"test-server"}],"defaultAllow":false})");
  return options;
}

}  // namespace

TEST_CASE("an allowed GET is relayed and audited with status and bytes", "[proxy][http]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  TempDir dir;
  ProxyOptions options = options_allowing_loopback();
  options.audit_log = dir.path() / "audit.jsonl";
  ProxyHarness harness(std::move(options));
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/hello?x=1", "127.0.0.1", "Proxy-Authorization: x\r\nConnection: close\r\n"));
    answer = read_answer(socket_reader(fd));
  });
  INFO(answer.error);
  CHECK(answer.status == 200);
  CHECK(answer.body == "hello GET /hello?x=1\n");
  auto received = server->received();
  REQUIRE(received.size() == 1);
  CHECK(received[0].rfind("GET /hello?x=1 HTTP/1.1\r\n", 0) == 0);  // origin-form upstream
  CHECK(received[0].find("Proxy-Authorization") == std::string::npos);

  REQUIRE(harness.events.size() == 1);
  const AuditRecord& record = harness.events[0];
  CHECK(record.decision == "allow");
  CHECK(record.rule == "test-server");
  CHECK(record.host == "127.0.0.1");
  CHECK(record.method == "GET");
  CHECK(record.path == "/hello?x=1");
  CHECK(record.address == "127.0.0.1");
  CHECK(record.upstream_status == 200);
  CHECK(record.bytes_up == received[0].size());
  CHECK(record.bytes_down == answer.head.size() + answer.body.size());
  CHECK(record.sandbox == "sb-test");

  std::ifstream log(dir.path() / "audit.jsonl");
  std::string line;
  REQUIRE(std::getline(log, line));
  auto parsed = parse_audit_line(line);
  REQUIRE(parsed.ok());
  CHECK(parsed->upstream_status == 200);
  CHECK(parsed->bytes_down == record.bytes_down);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("a denied host gets 403 naming the rule and nothing is connected", "[proxy][http]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(R"({"rules":[{"action":"allow","host":"127.0.0.1"},
      {"action":"deny","host":"*.blocked.test","name":"no-blocked"}],"defaultAllow":false})");
  ProxyHarness harness(std::move(options));
  HttpAnswer denied, unmatched;
  harness.run_http([&](int fd) {
    send_all(fd, get(80, "/", "api.blocked.test"));
    denied = read_answer(socket_reader(fd));
  });
  harness.run_http([&](int fd) {
    send_all(fd, get(80, "/", "example.com"));
    unmatched = read_answer(socket_reader(fd));
  });
  REQUIRE(harness.events.size() == 2);
  // The body and the headers (what curl -v shows) name the rule and the reason of the record.
  CHECK(denied.status == 403);
  CHECK(denied.body == "lockroom: api.blocked.test:80 is not allowed by this sandbox's network policy (rule: no-blocked): " +
                           harness.events[0].reason + "\n");
  CHECK(denied.head.find("X-Lockroom-Rule: no-blocked\r\n") != std::string::npos);
  CHECK(denied.head.find("X-Lockroom-Reason: " + harness.events[0].reason + "\r\n") != std::string::npos);
  CHECK(denied.head.find("Proxy-Status: lockroom; error=http_request_denied; details=\"rule no-blocked: " +
                         harness.events[0].reason + "\"\r\n") != std::string::npos);
  CHECK(harness.events[0].reason.find("api.blocked.test") != std::string::npos);
  CHECK(unmatched.status == 403);
  CHECK(unmatched.body == "lockroom: example.com:80 is not allowed by this sandbox's network policy (rule: default): no rule allows http example.com:80\n");
  CHECK(harness.events[0].decision == "deny");
  CHECK(harness.events[0].rule == "no-blocked");
  CHECK(harness.events[1].rule == "default");
  CHECK(harness.events[1].address.empty());
  CHECK(server->connections() == 0);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("loopback and metadata addresses are refused even when a * rule allows every host", "[proxy][http]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(R"({"rules":[{"action":"allow","host":"*"}],"defaultAllow":false})");
  options.connect_timeout = std::chrono::milliseconds(500);
  ProxyHarness harness(std::move(options));
  std::vector<HttpAnswer> answers;
  for (std::string host : {"localhost", "127.0.0.1", "169.254.169.254", "0x7f.1"}) {
    harness.run_http([&](int fd) {
      send_all(fd, get(server->port(), "/", host));
      answers.push_back(read_answer(socket_reader(fd)));
    });
  }
  REQUIRE(answers.size() == 4);
  for (const HttpAnswer& answer : answers) {
    CHECK(answer.status == 403);
    CHECK(answer.body.find("refused by policy") != std::string::npos);
  }
  CHECK(answers[0].body.find("127.0.0.1") != std::string::npos);  // the resolved address is named
  CHECK(answers[2].body.find("169.254") != std::string::npos);
  CHECK(server->connections() == 0);
  REQUIRE(harness.events.size() == 4);
  for (const AuditRecord& record : harness.events) {
    CHECK(record.decision == "deny");
    CHECK(record.rule == "address check");
  }
  CHECK(harness.close_all() == 0);
}

TEST_CASE("keep-alive: two requests on one connection are decided and audited each", "[proxy][http]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyHarness harness(options_allowing_loopback());
  HttpAnswer first, second, third;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/one"));
    first = read_answer(socket_reader(fd));
    send_all(fd, get(server->port(), "/two"));
    second = read_answer(socket_reader(fd));
    send_all(fd, get(80, "/three", "elsewhere.test"));  // another host on the same connection
    third = read_answer(socket_reader(fd));
  });
  CHECK(first.body == "hello GET /one\n");
  CHECK(second.body == "hello GET /two\n");
  CHECK(third.status == 403);
  CHECK(server->connections() == 1);  // the upstream connection was kept for the second request
  REQUIRE(harness.events.size() == 3);
  CHECK(harness.events[0].path == "/one");
  CHECK(harness.events[1].path == "/two");
  CHECK(harness.events[2].decision == "deny");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("a connect error is a 502 naming the address", "[proxy][http]") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);  // bound, not listening: connections are refused
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  std::uint16_t port = ntohs(address.sin_port);
  ProxyHarness harness(options_allowing_loopback());
  HttpAnswer answer, unreadable;
  harness.run_http([&](int guest) {
    send_all(guest, get(port, "/"));
    answer = read_answer(socket_reader(guest));
  });
  harness.run_http([&](int guest) {
    send_all(guest, "GET /origin-form HTTP/1.1\r\nHost: x\r\n\r\n");
    unreadable = read_answer(socket_reader(guest));
  });
  ::close(fd);
  CHECK(answer.status == 502);
  CHECK(answer.body.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(answer.body.find("refused") != std::string::npos);
  CHECK(unreadable.status == 400);
  CHECK(unreadable.body.find("lockroom: cannot read this request") == 0);
  CHECK(harness.close_all() == 0);
}

namespace {
// Loopback allowed, and one secret, api_token, scoped to api.example.com only: its sentinel
// sent to 127.0.0.1 is astray.
ProxyOptions options_with_api_token() {
  ProxyOptions options = options_allowing_loopback();
  auto secrets = parse_secrets(json::parse(R"([{"name":"api_token","from":{"env":"UNUSED"},"hosts":["api.example.com"]}])"));
  REQUIRE(secrets.ok());
  options.secrets = secrets.value();
  options.secret_values = {{"api_token", "real-value-123"}};
  return options;
}
}  // namespace

TEST_CASE("a sentinel sent to a host outside its secret's scope is blocked and audited", "[proxy][http][secrets]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyHarness harness(options_with_api_token());
  HttpAnswer in_header, in_body;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/steal", "127.0.0.1", "X-Token: LOCKROOM_SECRET_API_TOKEN\r\n"));
    in_header = read_answer(socket_reader(fd));
  });
  harness.run_http([&](int fd) {
    std::string body = "{\"token\":\"LOCKROOM_SECRET_API_TOKEN\"}";
    send_all(fd, "POST http://127.0.0.1:" + std::to_string(server->port()) +
                     "/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    in_body = read_answer(socket_reader(fd));
  });
  CHECK(in_header.status == 403);
  CHECK(in_header.body.find("sentinel of secret api_token") != std::string::npos);
  CHECK(in_body.status == 403);
  CHECK(in_body.body.find("request body") != std::string::npos);
  // Nothing reached the other host: not the head of the request whose body held the sentinel, not
  // even a connection (the body is screened before anything is sent).
  CHECK(server->connections() == 0);
  for (const std::string& request : server->received()) CHECK(request.find("LOCKROOM_SECRET_API_TOKEN") == std::string::npos);
  REQUIRE(harness.events.size() == 2);
  for (const AuditRecord& record : harness.events) {
    CHECK(record.decision == "block");
    CHECK(record.reason.rfind("exfiltration: ", 0) == 0);
  }
  CHECK(harness.close_all() == 0);
}

TEST_CASE("bodies to a host outside a secret's scope are screened whole: a clean one arrives intact, a big one is refused", "[proxy][http][secrets]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyHarness harness(options_with_api_token());
  std::string url = "http://127.0.0.1:" + std::to_string(server->port()) + "/upload";
  HttpAnswer chunked, too_big;
  // A chunked body in pieces, a sentinel's prefix split across them: held until it ended, then
  // sent whole after the head.
  harness.run_http([&](int fd) {
    send_all(fd, "POST " + url + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    send_all(fd, "5\r\nLOCKR\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(server->connections() == 0);  // nothing sent yet: the body is still being screened
    send_all(fd, "6\r\nOOM ok\r\n0\r\n\r\n");
    chunked = read_answer(socket_reader(fd));
  });
  harness.run_http([&](int fd) {
    send_all(fd, "POST " + url + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                     std::to_string(kMaxScreenedBody + 1) + "\r\n\r\nx");
    too_big = read_answer(socket_reader(fd));
  });
  CHECK(chunked.status == 200);
  std::string received;
  for (const std::string& part : server->received()) received += part + "|";
  INFO(received);
  // (The test server does not read chunked bodies: it records the body as a second piece.)
  CHECK(received.find("POST /upload") == received.rfind("POST /upload"));
  CHECK(received.find("LOCKR") != std::string::npos);
  CHECK(received.find("OOM ok") != std::string::npos);
  CHECK(too_big.status == 413);
  CHECK(too_big.body.find("checked for secrets' sentinels") != std::string::npos);
  CHECK(server->connections() == 1);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("approvals: allow once, allow for the sandbox, deny, no hook", "[proxy][http][approval]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  // localhost is covered by no rule (so it is asked about); its address 127.0.0.1 is named.
  std::string policy_text = R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"unmatched":"ask","defaultAllow":false})";
  ApprovalAnswer next = ApprovalAnswer::kAllowOnce;
  std::vector<ApprovalQuestion> questions;
  ProxyOptions options;
  options.policy = policy_from(policy_text);
  options.approve = [&](const ApprovalQuestion& question, ApprovalReply reply) {
    questions.push_back(question);
    reply(next);
    reply(ApprovalAnswer::kDeny);  // a second reply is ignored
  };
  ProxyHarness harness(std::move(options));
  auto ask = [&](ApprovalAnswer answer) {
    next = answer;
    HttpAnswer result;
    harness.run_http([&](int fd) {
      send_all(fd, get(server->port(), "/asked", "localhost"));
      result = read_answer(socket_reader(fd));
    });
    return result;
  };
  CHECK(ask(ApprovalAnswer::kAllowOnce).status == 200);
  CHECK(harness.proxy().policy().rules.size() == 1);
  CHECK(ask(ApprovalAnswer::kDeny).status == 403);
  CHECK(ask(ApprovalAnswer::kAllowSandbox).status == 200);
  REQUIRE(harness.proxy().policy().rules.size() == 2);
  CHECK(harness.proxy().policy().rules[0].name == "user");
  CHECK(ask(ApprovalAnswer::kDeny).status == 200);  // not asked again: the sandbox rule allows it
  REQUIRE(questions.size() == 3);
  CHECK(questions[0].host == "localhost");
  CHECK(questions[0].port == server->port());
  CHECK(questions[0].scheme == "http");
  CHECK(questions[0].path == "/asked");
  REQUIRE(harness.events.size() == 4);
  CHECK(harness.events[0].rule == "user");
  CHECK(harness.events[0].approval == "allowOnce");
  CHECK(harness.events[1].decision == "deny");
  CHECK(harness.events[1].reason == "the user answered deny");
  CHECK(harness.events[1].approval == "deny");
  CHECK(harness.events[2].approval == "allowSandbox");
  CHECK(harness.events[3].approval.empty());  // the rule "user" decided: nobody was asked
  CHECK(harness.close_all() == 0);

  ProxyOptions no_hook;
  no_hook.policy = policy_from(policy_text);
  ProxyHarness without(std::move(no_hook));
  HttpAnswer denied;
  without.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/asked", "localhost"));
    denied = read_answer(socket_reader(fd));
  });
  CHECK(denied.status == 403);
  CHECK(without.events.at(0).reason.find("not asked: the editor did not declare network approvals") != std::string::npos);
  CHECK(without.events.at(0).approval == "notAsked");
  CHECK(without.events.at(0).rule == "default");
  CHECK(without.close_all() == 0);
}

TEST_CASE("an approval answered after the guest went away is harmless", "[proxy][http][approval]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"unmatched":"ask","defaultAllow":false})");
  std::vector<ApprovalReply> pending;
  options.approve = [&](const ApprovalQuestion&, ApprovalReply reply) { pending.push_back(std::move(reply)); };
  ProxyHarness harness(std::move(options));
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/late", "localhost"));
    usleep(100 * 1000);  // the guest gives up before anyone answered
  });
  harness.run_until([&] { return harness.proxy().stats().sessions == 0; });
  REQUIRE(pending.size() == 1);
  CHECK(harness.proxy().stats().sessions == 0);
  pending[0](ApprovalAnswer::kAllowSandbox);  // still updates the policy, connects nothing
  harness.run_until([] { return false; }, std::chrono::milliseconds(200));  // a wrong connect would show
  CHECK(harness.proxy().policy().rules.size() == 2);
  CHECK(server->connections() == 0);
  CHECK(harness.events.empty());
  CHECK(harness.close_all() == 0);
  pending[0](ApprovalAnswer::kAllowOnce);  // and after the proxy closed
}

TEST_CASE("backpressure: a slow guest does not make the proxy buffer a 20 MB response", "[proxy][http][backpressure]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyHarness harness(options_allowing_loopback());
  constexpr std::size_t kSize = 20u << 20;
  HttpAnswer answer;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/big/" + std::to_string(kSize)));
    answer = read_answer(socket_reader(fd), "GET", 100);
  });
  INFO(answer.error);
  CHECK(answer.status == 200);
  CHECK(answer.body.size() == kSize);
  std::size_t peak = harness.proxy().stats().peak_buffered_bytes;
  INFO("peak bytes held by the proxy: " << peak);
  CHECK(peak > 0);
  CHECK(peak < (1u << 20));
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].bytes_down > kSize);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("close() ends open sessions and leaves no handles", "[proxy][close]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyHarness harness(options_allowing_loopback());
  HttpAnswer answer;
  int guest_fd = -1;
  // A guest that holds a keep-alive connection with an open upstream while the proxy closes.
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/keep"));
    answer = read_answer(socket_reader(fd));
    guest_fd = dup(fd);
  }, /*settle=*/false);
  CHECK(answer.status == 200);
  CHECK(harness.proxy().stats().sessions == 1);
  CHECK(harness.close_all() == 0);
  CHECK(harness.close_done);
  char byte;
  CHECK(recv(guest_fd, &byte, 1, 0) <= 0);  // the guest's connection was ended
  ::close(guest_fd);
}
