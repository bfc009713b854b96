// What an editor sees of a sandbox's network, with a real guest and a real HTTP server on the
// host: a tunnel's open, progress and close events under one connectionId, progress of a long
// plain-HTTP transfer, the guest program behind each connection (its command and lockroom's
// process id); two concurrent connections to a host nobody allowed yet make one network/approve
// (answered late by the test's editor), and both records carry its approvalId; allowHost grants
// the host on any port; network/policy read and written back does not duplicate the default
// allow list; `policy: false` closes an open tunnel and refuses new connections until a policy
// is written again.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "server/core/kit_request.h"
#include "server/egress/policy/policy_json.h"
#include "tests/support/listen_any.h"
#include "tests/integration/editor_session.h"
#include "tests/integration/sandbox_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;

namespace {

// HTTP on all IPv4 addresses of this host, a thread per connection: `GET /slow/<chunks>/<gap ms>`
// answers <chunks> blocks of 64 KiB with a pause before each (a long transfer); anything else
// "hello\n". Always Connection: close.
class SlowHttpServer {
 public:
  SlowHttpServer() {
    fd_ = listen_on_any_ipv4(port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~SlowHttpServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    std::lock_guard lock(mutex_);
    for (auto& worker : workers_) worker.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  void serve() {
    while (!stop_) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::lock_guard lock(mutex_);
      workers_.emplace_back([this, c] { answer(c); });
    }
  }
  void answer(int c) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = read(c, buf, sizeof buf);
      if (n <= 0) break;
      head.append(buf, static_cast<std::size_t>(n));
    }
    std::size_t path_at = head.find(' ') + 1;
    std::string path = head.substr(path_at, head.find(' ', path_at) - path_at);
    int chunks = 0, gap = 0;
    if (std::sscanf(path.c_str(), "/slow/%d/%d", &chunks, &gap) == 2 && chunks > 0 && chunks < 1000) {
      std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(chunks * 65536) + "\r\nConnection: close\r\n\r\n";
      bool ok = send(c, reply.data(), reply.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(reply.size());
      std::string block(65536, 'x');
      for (int i = 0; ok && i < chunks && !stop_; ++i) {
        usleep(static_cast<useconds_t>(gap) * 1000);
        ok = send(c, block.data(), block.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(block.size());
      }
    } else {
      const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
      (void)!send(c, reply, sizeof reply - 1, MSG_NOSIGNAL);
    }
    close(c);
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::thread> workers_;
};

// The sandbox's events as sent (open, progress, close), from `from` on.
std::vector<egress::AuditRecord> events_of(World& w, const std::string& sandbox, std::size_t from = 0) {
  std::vector<egress::AuditRecord> out;
  for (std::size_t i = from; i < w.events.network_events.size(); ++i)
    if (w.events.network_events[i].first == sandbox) out.push_back(w.events.network_events[i].second);
  return out;
}

std::vector<egress::AuditRecord> of_connection(const std::vector<egress::AuditRecord>& events, std::uint64_t connection) {
  std::vector<egress::AuditRecord> out;
  for (const auto& e : events)
    if (e.connection_id == connection) out.push_back(e);
  return out;
}

// A guest script with the proxy used for every address (NO_PROXY names 127.0.0.1).
std::string guest_script(const std::string& script) { return "export no_proxy= NO_PROXY=; " + script + " 2>&1"; }

}  // namespace

TEST_CASE("network events: tunnels open, progress and close; approvals are one prompt with an id; grants; policy round trip; "
          "network off at run time",
          "[sandbox][network][events]") {
  SlowHttpServer server;
  const std::string p = std::to_string(server.port());
  World& w = world();
  EditorStub& editor = w.editor_stub();
  Editor client(w);
  // 127.0.0.1 on the server's port is allowed (so it passes the address gate); the name
  // localhost is covered by no rule, so it is asked about; the default allow list is on.
  json policy{{"rules", json::array({json{{"action", "allow"}, {"host", "127.0.0.1"}, {"ports", json::array({server.port()})}, {"name", "test-server"}}})},
              {"unmatched", "ask"}};
  auto parsed = egress::parse_policy(policy);
  REQUIRE(parsed.ok());
  core::CreateRequest request;
  request.network = core::NetworkRequest{*parsed, {}, {}};
  core::finish_network(request);  // the default allow list, as sandbox/create adds it
  request.network->progress_interval = std::chrono::milliseconds(200);
  std::string sb = w.create(request);

  // 1. A CONNECT tunnel (curl -p) that lasts ~2 s: "open", several "progress", then "close",
  //    all under one connectionId, naming the guest program and lockroom's process.
  std::size_t mark = w.events.network_events.size();
  std::string tunnel_proc = w.start(sb, {"sh", "-c", guest_script("curl -sS -p -o /dev/null -w '%{http_code}' http://127.0.0.1:" + p + "/slow/16/120")});
  w.wait_exit(tunnel_proc);
  CHECK(w.events.output[tunnel_proc] == "200");
  auto tunnel = events_of(w, sb, mark);
  REQUIRE_FALSE(tunnel.empty());
  auto one = of_connection(tunnel, tunnel.front().connection_id);
  CHECK(one.size() == tunnel.size());  // nothing else happened meanwhile
  REQUIRE(one.size() >= 4);
  CHECK(one.front().phase == "open");
  CHECK(one.back().phase == "close");
  for (std::size_t i = 1; i + 1 < one.size(); ++i) {
    CHECK(one[i].phase == "progress");
    CHECK(one[i].bytes_down >= one[i - 1].bytes_down);
  }
  CHECK(one.back().bytes_down > 16u * 65536);
  CHECK(one.back().scheme == "tcp");
  CHECK(one.back().rule == "test-server");
  for (const auto& e : one) {
    REQUIRE(e.process);
    CHECK(e.process->pid > 1);
    CHECK(e.process->command.rfind("curl -sS -p", 0) == 0);
    CHECK(e.process->process_id == tunnel_proc);  // curl's parent sh is the process lockroom started
  }

  // 2. A long plain-HTTP transfer (wget) reports progress too, with its request number.
  mark = w.events.network_events.size();
  CHECK(w.sh(sb, guest_script("wget -q -O /dev/null http://127.0.0.1:" + p + "/slow/12/120 && echo ok")) == "ok\n");
  auto plain = events_of(w, sb, mark);
  REQUIRE(plain.size() >= 3);
  CHECK(plain.back().phase == "close");
  CHECK(plain.back().request == 1);
  CHECK(plain.front().phase == "progress");
  REQUIRE(plain.back().process);
  CHECK(plain.back().process->command.rfind("wget", 0) == 0);

  // 3. Two connections to localhost at once, nobody allowed it yet: one network/approve,
  //    answered late; both are decided by it and say so.
  editor.timeout = std::chrono::seconds(30);
  editor.answer_after = std::chrono::milliseconds(4000);
  editor.script = {"allowOnce"};
  std::size_t asked = editor.asked.size();
  mark = w.events.network_events.size();
  std::string both = w.start(sb, {"sh", "-c", guest_script("curl -sS http://localhost:" + p + "/a & curl -sS http://localhost:" + p + "/b & wait")});
  w.wait_exit(both);
  CHECK(w.events.output[both] == "hello\nhello\n");
  REQUIRE(editor.asked.size() == asked + 1);  // one prompt
  json question = editor.asked.back();
  INFO("question: " << question.dump());
  REQUIRE(question.contains("key"));
  CHECK(question["key"] == "localhost:" + p);
  CHECK(question["timeoutMs"] == 30000);
  CHECK(question["deadline"].get<std::string>().size() == 24);
  REQUIRE(question["approvalId"].is_string());
  // The asking program is named when the guest could tell in time (informative; a loaded machine
  // can miss it): then it is the curl lockroom started.
  if (question.contains("process")) {
    CHECK(question["process"]["command"].get<std::string>().rfind("curl -sS http://localhost:", 0) == 0);
    CHECK(question["process"]["processId"] == both);
  }
  CHECK(question["scopes"] == json::parse(R"([{"host":"localhost","ports":[)" + p + R"(]},{"host":"localhost","ports":"any"}])"));
  CHECK(question["options"] == json::array({"allowOnce", "allowSandbox", "allowHost", "deny"}));
  std::vector<egress::AuditRecord> decided;
  for (const auto& e : events_of(w, sb, mark))
    if (e.phase == "close") decided.push_back(e);
  REQUIRE(decided.size() == 2);
  for (const auto& e : decided) {
    CHECK(e.decision == "allow");
    CHECK(e.approval == "allowOnce");
    CHECK(e.approval_id == question["approvalId"].get<std::string>());
  }
  CHECK(decided[0].connection_id != decided[1].connection_id);

  // 4. allowHost: the host on any port, as a rule marked "user".
  editor.answer_after = std::chrono::milliseconds(0);
  editor.script = {"allowHost"};
  CHECK(w.sh(sb, guest_script("curl -sS http://localhost:" + p + "/c")) == "hello\n");
  CHECK(editor.script.empty());
  json read = client.result("network/policy", {{"sandboxId", sb}});
  json first_rule = read["policy"]["rules"][0];
  CHECK(first_rule == json{{"action", "allow"}, {"host", "localhost"}, {"name", "user"}, {"origin", "user"}});

  // 5. Read and written back: the same policy, the default allow list once.
  std::size_t defaults = 0;
  for (const json& rule : read["policy"]["rules"]) defaults += rule.value("origin", "") == "default";
  CHECK(defaults > 0);
  json written = client.result("network/policy", {{"sandboxId", sb}, {"policy", read["policy"]}});
  CHECK(written["policy"] == read["policy"]);
  json twice = client.result("network/policy", {{"sandboxId", sb}, {"policy", written["policy"]}});
  CHECK(twice["policy"]["rules"].size() == read["policy"]["rules"].size());

  // 6. network off while a tunnel is open: it is closed (its close event says why), a new
  //    connection is refused at once, and a policy switches it on again.
  mark = w.events.network_events.size();
  std::string cut = w.start(sb, {"sh", "-c", guest_script("curl -sS -p -o /dev/null http://127.0.0.1:" + p + "/slow/200/100; echo rc=$?")});
  w.run_until([&] {
    for (const auto& e : events_of(w, sb, mark))
      if (e.phase == "open") return true;
    return false;
  });
  json off = client.result("network/policy", {{"sandboxId", sb}, {"policy", false}});
  CHECK(off["policy"] == false);
  w.wait_exit(cut);
  const std::string cut_output = w.events.output[cut];
  INFO(cut_output);
  CHECK(cut_output.find("rc=") != std::string::npos);
  CHECK(cut_output.find("rc=0") == std::string::npos);
  auto cut_events = events_of(w, sb, mark);
  REQUIRE_FALSE(cut_events.empty());
  CHECK(cut_events.back().phase == "close");
  CHECK(cut_events.back().reason == "closed: the sandbox's network was switched off");
  CHECK(client.result("network/policy", {{"sandboxId", sb}})["policy"] == false);
  std::string refused = w.sh(sb, guest_script("wget -q -O- http://127.0.0.1:" + p + "/refused"));
  CHECK(refused.find("403") != std::string::npos);
  CHECK(w.events.network.back().second.rule == "network off");
  json on = client.result("network/policy", {{"sandboxId", sb}, {"policy", read["policy"]}});
  CHECK(on["policy"] == read["policy"]);
  CHECK(w.sh(sb, guest_script("wget -q -O- http://127.0.0.1:" + p + "/again")) == "hello\n");

  w.destroy(sb);
  w.close_editor();
}
