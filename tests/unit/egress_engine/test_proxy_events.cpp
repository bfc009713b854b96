// What an editor sees of each connection, against a real HTTP server on loopback: every event of
// one guest connection carries its connectionId; a tunnel relayed as is sends "open" when it
// starts, "progress" while it moves bytes and its audit record ("close") at the end, and only
// that last one is in the audit log; a long HTTP response reports progress too. Concurrent asks
// for one host and port are one approval, whose id every record it decided carries; grants may
// be wider (any port, a wildcard) within bounds; the guest process reaches the question and the
// records; switching the network off closes what is open and refuses what comes.
#include <catch2/catch.hpp>

#include <fstream>

#include "server/egress/policy/audit.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/egress_engine/engine_test_support.h"

using namespace lockroom::egress;
using namespace lockroom::testing;

namespace {

constexpr const char* kLocalhostPolicy =
    R"({"rules":[{"action":"allow","host":"localhost","name":"local-name"},{"action":"allow","host":"127.0.0.1"}],"defaultAllow":false})";
constexpr const char* kAskPolicy = R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"unmatched":"ask","defaultAllow":false})";

std::string get(std::uint16_t port, const std::string& path, const std::string& host = "127.0.0.1") {
  return "GET http://" + host + ":" + std::to_string(port) + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
}

std::string connect_request(std::uint16_t port, const std::string& host = "localhost") {
  return "CONNECT " + host + ":" + std::to_string(port) + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) + "\r\n\r\n";
}

// Runs `fn` on the loop after `ms` (a one-shot timer, freed in its close callback).
void later(uv_loop_t* loop, std::uint64_t ms, std::function<void()> fn) {
  auto* timer = new uv_timer_t;
  uv_timer_init(loop, timer);
  timer->data = new std::function<void()>(std::move(fn));
  uv_timer_start(timer, [](uv_timer_t* t) {
    std::unique_ptr<std::function<void()>> call(static_cast<std::function<void()>*>(t->data));
    uv_close(reinterpret_cast<uv_handle_t*>(t), [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    (*call)();
  }, ms, 0);
}

std::vector<std::string> phases_of(const std::vector<AuditRecord>& events, std::uint64_t connection) {
  std::vector<std::string> phases;
  for (const AuditRecord& e : events)
    if (e.connection_id == connection) phases.push_back(e.phase);
  return phases;
}

}  // namespace

TEST_CASE("a tunnel reports open, progress and close under one connectionId; the log holds only the close", "[proxy][events]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  TempDir dir;
  ProxyOptions options;
  options.policy = policy_from(kLocalhostPolicy);
  options.progress_interval = std::chrono::milliseconds(50);
  options.audit_log = dir.path() / "audit.jsonl";
  ProxyHarness harness(std::move(options));
  constexpr std::size_t kSize = 4u << 20;
  HttpAnswer established, answer;
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    established = read_answer(socket_reader(fd), "CONNECT");
    // Not TLS: a plain TCP tunnel (the policy allows any scheme), read slowly so it lasts.
    send_all(fd, "GET /big/" + std::to_string(kSize) + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    answer = read_answer(socket_reader(fd), "GET", 3000);
  });
  CHECK(established.status == 200);
  CHECK(answer.body.size() == kSize);
  REQUIRE(harness.events.size() == 1);
  const AuditRecord& close = harness.events[0];
  CHECK(close.connection_id != 0);
  CHECK(close.scheme == "tcp");
  auto phases = phases_of(harness.all_events, close.connection_id);
  REQUIRE(phases.size() >= 4);
  CHECK(phases.front() == "open");
  CHECK(phases.back() == "close");
  CHECK(std::count(phases.begin(), phases.end(), "progress") == static_cast<long>(phases.size()) - 2);
  // Progress counts bytes so far: growing, below the total; the open event says who decided.
  const AuditRecord& open = harness.all_events.front();
  CHECK(open.decision == "allow");
  CHECK(open.rule == "local-name");
  CHECK(open.address == "127.0.0.1");
  std::uint64_t last = 0;
  for (const AuditRecord& e : harness.all_events) {
    if (e.phase != "progress") continue;
    CHECK(e.bytes_down >= last);
    CHECK(e.bytes_down < close.bytes_down);
    last = e.bytes_down;
  }
  CHECK(last > 0);
  CHECK(close.bytes_down > kSize);
  // The audit log: one line, the decision, with its connectionId and no phase.
  std::ifstream log(dir.path() / "audit.jsonl");
  std::string line, only;
  int lines = 0;
  while (std::getline(log, line)) ++lines, only = line;
  CHECK(lines == 1);
  auto parsed = parse_audit_line(only);
  REQUIRE(parsed.ok());
  CHECK(parsed->connection_id == close.connection_id);
  CHECK(parsed->phase.empty());
  CHECK(harness.close_all() == 0);
}

TEST_CASE("a long HTTP response reports progress with its request number; progress can be off", "[proxy][events]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  for (int interval : {50, 0}) {
    ProxyOptions options;
    options.policy = policy_from(R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"defaultAllow":false})");
    options.progress_interval = std::chrono::milliseconds(interval);
    ProxyHarness harness(std::move(options));
    HttpAnswer small, big;
    harness.run_http([&](int fd) {
      send_all(fd, get(server->port(), "/first"));
      small = read_answer(socket_reader(fd));
      send_all(fd, get(server->port(), "/big/" + std::to_string(3u << 20)));
      big = read_answer(socket_reader(fd), "GET", 3000);
    });
    CHECK(small.status == 200);
    CHECK(big.body.size() == (3u << 20));
    REQUIRE(harness.events.size() == 2);
    CHECK(harness.events[0].connection_id == harness.events[1].connection_id);  // one guest connection
    CHECK(harness.events[0].request == 1);
    CHECK(harness.events[1].request == 2);
    std::size_t progress = 0;
    for (const AuditRecord& e : harness.all_events) {
      CHECK(e.phase != "open");  // "open" is for tunnels
      if (e.phase != "progress") continue;
      ++progress;
      CHECK(e.request == 2);
      CHECK(e.connection_id == harness.events[1].connection_id);
      CHECK(e.bytes_down < harness.events[1].bytes_down);
    }
    if (interval) CHECK(progress >= 2);
    else CHECK(progress == 0);
    CHECK(harness.close_all() == 0);
  }
}

TEST_CASE("concurrent asks for one host and port are one approval; every record it decided carries its id", "[proxy][events][approval]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  std::vector<ApprovalQuestion> questions;
  ProxyOptions options;
  options.sandbox_id = "sb-one";
  options.policy = policy_from(kAskPolicy);
  uv_loop_t* loop = nullptr;
  options.approve = [&](const ApprovalQuestion& question, ApprovalReply reply) {
    questions.push_back(question);
    later(loop, 300, [reply] { reply(ApprovalAnswer::kAllowOnce); });  // both connections are waiting by then
  };
  ProxyHarness harness(std::move(options));
  loop = harness.loop();
  GuestProcess curl{42, "curl http://localhost/", {}};
  int second = harness.open_http(ConnectionOrigin{GuestProcess{43, "wget -q -O- http://localhost/", {}}});
  HttpAnswer a, b;
  harness.run_http(
      [&](int fd) {
        send_all(fd, get(server->port(), "/a", "localhost"));
        usleep(50 * 1000);
        set_socket_timeouts(second, 15);
        send_all(second, get(server->port(), "/b", "localhost"));
        a = read_answer(socket_reader(fd));
        b = read_answer(socket_reader(second));
        ::close(second);
      },
      true, ConnectionOrigin{curl});
  CHECK(a.status == 200);
  CHECK(b.status == 200);
  REQUIRE(questions.size() == 1);  // one prompt
  CHECK(questions[0].approval_id == "sb-one-a1");
  CHECK(questions[0].key == "localhost:" + std::to_string(server->port()));
  REQUIRE(questions[0].process);
  CHECK(*questions[0].process == curl);
  REQUIRE(harness.events.size() == 2);
  CHECK(harness.events[0].connection_id != harness.events[1].connection_id);
  for (const AuditRecord& e : harness.events) {
    CHECK(e.approval_id == "sb-one-a1");
    CHECK(e.approval == "allowOnce");
    CHECK(e.rule == "user");
    REQUIRE(e.process);
  }
  CHECK(harness.events[0].process->pid + harness.events[1].process->pid == 85);
  // Later, a new ask is a new approval.
  HttpAnswer c;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/c", "localhost"));
    c = read_answer(socket_reader(fd));
  });
  CHECK(c.status == 200);
  REQUIRE(questions.size() == 2);
  CHECK(questions[1].approval_id == "sb-one-a2");
  CHECK(harness.close_all() == 0);
}

TEST_CASE("grants: the asked host on any port, a wildcard within the registrable domain, a wider one denies", "[proxy][events][approval]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ApprovalOutcome next;
  ProxyOptions options;
  options.policy = policy_from(kAskPolicy);
  options.approve = [&](const ApprovalQuestion&, ApprovalReply reply) { reply(next); };
  ProxyHarness harness(std::move(options));
  auto ask = [&](ApprovalOutcome outcome) {
    next = std::move(outcome);
    HttpAnswer answer;
    harness.run_http([&](int fd) {
      send_all(fd, get(server->port(), "/asked", "localhost"));
      answer = read_answer(socket_reader(fd));
    });
    return answer;
  };
  ApprovalOutcome everything(ApprovalAnswer::kAllowSandbox);
  everything.scope = GrantScope{"*", true, {}};
  CHECK(ask(everything).status == 403);
  CHECK(harness.events.back().approval == "noAnswer");
  CHECK(harness.events.back().approval_reason == "invalidScope");
  CHECK(harness.events.back().reason.find("\"*\" would allow every host") != std::string::npos);
  CHECK(harness.proxy().policy().rules.size() == 1);  // nothing granted

  ApprovalOutcome any_port(ApprovalAnswer::kAllowSandbox);
  any_port.scope = GrantScope{"", true, {}};
  CHECK(ask(any_port).status == 200);
  CHECK(harness.events.back().reason == "the user answered allow for this sandbox (localhost, any port)");
  const Rule& granted = harness.proxy().policy().rules.front();
  CHECK(granted.host.text() == "localhost");
  CHECK(granted.ports.empty());
  CHECK(granted.origin == RuleOrigin::kUser);
  CHECK(harness.close_all() == 0);
}

TEST_CASE("switching the network off closes an open tunnel (audited) and refuses new connections until a policy is set", "[proxy][events]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  ProxyOptions options;
  options.policy = policy_from(kLocalhostPolicy);
  ProxyHarness harness(std::move(options));
  Proxy* proxy = &harness.proxy();
  Policy kept = proxy->policy();
  later(harness.loop(), 600, [proxy] { proxy->switch_off(); });
  HttpAnswer established, first;
  long last_read = 1;
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    established = read_answer(socket_reader(fd), "CONNECT");
    send_all(fd, "GET /first HTTP/1.1\r\nHost: localhost\r\n\r\n");  // kept alive: the tunnel stays open
    first = read_answer(socket_reader(fd));
    char byte;
    last_read = recv(fd, &byte, 1, 0);  // until the network is switched off (within the 15 s socket timeout)
  });
  CHECK(established.status == 200);
  CHECK(first.status == 200);
  CHECK(last_read <= 0);
  CHECK(proxy->switched_off());
  REQUIRE(harness.events.size() == 1);
  CHECK(harness.events[0].decision == "allow");
  CHECK(harness.events[0].reason == "closed: the sandbox's network was switched off");
  CHECK(harness.events[0].bytes_up > 0);

  // New connections are refused at once, plain HTTP and CONNECT alike.
  HttpAnswer refused, refused_connect;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/off"));
    refused = read_answer(socket_reader(fd));
  });
  harness.run_http([&](int fd) {
    send_all(fd, connect_request(server->port()));
    refused_connect = read_answer(socket_reader(fd), "CONNECT");
  });
  CHECK(refused.status == 403);
  CHECK(refused.head.find("X-Lockroom-Rule: network off") != std::string::npos);
  CHECK(refused_connect.status == 403);
  REQUIRE(harness.events.size() == 3);
  CHECK(harness.events[1].rule == "network off");
  CHECK(harness.events[2].rule == "network off");

  // A policy switches it on again.
  proxy->set_policy(kept);
  CHECK_FALSE(proxy->switched_off());
  HttpAnswer again;
  harness.run_http([&](int fd) {
    send_all(fd, get(server->port(), "/again"));
    again = read_answer(socket_reader(fd));
  });
  CHECK(again.status == 200);
  CHECK(harness.close_all() == 0);
}
