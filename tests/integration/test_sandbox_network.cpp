// Egress with real guests: a guest program reaches a real HTTP server on the host only through
// lockroom's policy proxy — allowed by an exact rule, refused for the metadata address and for a
// name resolving to loopback, with every decision audited; a secret reaches the server while the
// guest only ever holds its sentinel, and the sentinel sent to another host is blocked.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "server/egress/policy/policy_json.h"
#include "server/egress/policy/secrets.h"
#include "tests/support/listen_any.h"
#include "tests/integration/sandbox_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;

namespace {

// A tiny HTTP server on all IPv4 addresses of this host (so 127.0.0.1 and 127.0.0.2 reach it),
// answering "hello" and keeping every request head it got.
class HostHttpServer {
 public:
  HostHttpServer() {
    fd_ = listen_on_any_ipv4(port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~HostHttpServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(head);
      }
      const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
      (void)!write(c, reply, sizeof reply - 1);
      close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> requests_;
};

core::NetworkRequest network_for(int port) {
  json policy{{"rules", json::array({json{{"action", "allow"}, {"host", "127.0.0.1"}, {"ports", json::array({port})}, {"name", "test-server"}},
                                     json{{"action", "allow"}, {"host", "127.0.0.2"}, {"ports", json::array({port})}, {"name", "other-host"}},
                                     json{{"action", "allow"}, {"host", "*"}, {"name", "everything"}}})},
              {"defaultAllow", false}};
  auto parsed = egress::parse_policy(policy);
  REQUIRE(parsed.ok());
  json secrets = json::array({json{{"name", "it_token"},
                                   {"from", {{"env", "LOCKROOM_IT_TOKEN"}}},
                                   {"hosts", json::array({"127.0.0.1"})},
                                   {"inject", {{"header", "Authorization"}, {"value", "Bearer {value}"}}}}});
  auto parsed_secrets = egress::parse_secrets(secrets);
  REQUIRE(parsed_secrets.ok());
  return core::NetworkRequest{*parsed, *parsed_secrets, {}};
}

// Runs `script` in the sandbox with the proxy used for every address (busybox wget has no
// NO_PROXY), returns its output.
std::string guest(World& w, const std::string& sandbox, const std::string& script) {
  std::string p = w.start(sandbox, {"sh", "-c", "export no_proxy= NO_PROXY=; " + script + " 2>&1"});
  w.wait_exit(p);
  return w.events.output[p];
}

}  // namespace

TEST_CASE("a guest reaches the host only through the policy proxy, audited, secrets injected outside the guest", "[sandbox][network]") {
  setenv("LOCKROOM_IT_TOKEN", "real-secret-value", 1);
  HostHttpServer server;
  World& w = world();
  core::CreateRequest request;
  request.network = network_for(server.port());
  std::optional<Result<core::CreateResult>> created;
  w.manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
  w.run_until([&] { return created.has_value(); });
  INFO((created->ok() ? std::string() : created->error().message));
  REQUIRE(created->ok());
  std::string sb = (*created)->sandbox_id;
  REQUIRE((*created)->audit_log);
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/hello";

  // The proxy variables are set; the secret is only a sentinel in the guest.
  std::string env = guest(w, sb, "echo $HTTP_PROXY; echo $LOCKROOM_IT_TOKEN; grep -rl real-secret-value /etc /workspace /tmp 2>/dev/null | wc -l");
  CHECK(env == "http://127.0.0.1:3128\nLOCKROOM_SECRET_IT_TOKEN\n0\n");

  // Allowed by the exact rule: the host's server answers, and gets the real secret.
  CHECK(guest(w, sb, "wget -q -O- " + url) == "hello\n");
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].find("Authorization: Bearer real-secret-value\r\n") != std::string::npos);

  // The metadata address and a name that resolves to loopback are refused despite the `*` rule
  // (only the exact address and port a rule names get through the private-address gate).
  CHECK(guest(w, sb, "wget -q -O- http://169.254.169.254/latest/meta-data/").find("403") != std::string::npos);
  CHECK(guest(w, sb, "wget -q -O- http://localhost:9/").find("403") != std::string::npos);

  // The sentinel sent to a host outside the secret's scope is blocked, and never arrives.
  std::string other = "http://127.0.0.2:" + std::to_string(server.port()) + "/leak";
  CHECK(guest(w, sb, "wget -q -O- --header \"X-Token: $LOCKROOM_IT_TOKEN\" " + other).find("403") != std::string::npos);
  CHECK(server.requests().size() == 1);

  // Every decision is in the audit log and was sent as an event.
  std::vector<std::string> decisions;
  for (const auto& [id, record] : w.events.network)
    if (id == sb) decisions.push_back(record.decision + " " + record.host + " " + record.rule);
  REQUIRE(decisions.size() == 4);
  CHECK(decisions[0] == "allow 127.0.0.1 test-server");
  CHECK(decisions[1].rfind("deny 169.254.169.254", 0) == 0);
  CHECK(decisions[2].rfind("deny localhost", 0) == 0);
  CHECK(decisions[3].rfind("block 127.0.0.2", 0) == 0);
  std::ifstream log(*(*created)->audit_log);
  std::string line;
  int lines = 0;
  while (std::getline(log, line)) {
    ++lines;
    CHECK(line.find("real-secret-value") == std::string::npos);
  }
  CHECK(lines == 4);
  w.destroy(sb);
}

TEST_CASE("a sandbox created without network has no way out", "[sandbox][network]") {
  World& w = world();
  std::string sb = w.create();
  CHECK(guest(w, sb, "echo ${HTTP_PROXY:-none}; wget -q -O- http://example.com/ >/dev/null; echo rc=$?") == "none\nwget: bad address 'example.com'\nrc=1\n");
  w.destroy(sb);
}
