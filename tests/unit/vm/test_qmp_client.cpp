// QmpClient against a scripted QMP peer: replies, errors, timeouts, a peer that hangs up or
// lies, a socket that appears late — each command answered exactly once, the loop left clean.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <memory>

#include "server/vm/qmp_client.h"
#include "tests/fakes/fake_qmp_peer.h"

using lockroom::ErrorCode;
using lockroom::Result;
using lockroom::testing::FakeQmpPeer;
using lockroom::vm::QmpClient;
using namespace std::chrono_literals;

namespace {

struct Fixture {
  uv_loop_t loop;
  std::string dir;
  std::string sock;
  Fixture() {
    uv_loop_init(&loop);
    char tmpl[] = "/tmp/lockroom-qmp-test-XXXXXX";
    dir = mkdtemp(tmpl);
    sock = dir + "/qmp.sock";
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
  void run() { uv_run(&loop, UV_RUN_DEFAULT); }
  // Lets close callbacks run; 0 when nothing was left open.
  int finish() {
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop);
  }
};

}  // namespace

TEST_CASE("qmp: greeting, capabilities, a command's return value and events", "[vm][qmp]") {
  Fixture f;
  {
    FakeQmpPeer peer(&f.loop, f.sock);
    REQUIRE(peer.listen());
    peer.script("query-status", {FakeQmpPeer::Kind::kReturn, {{"status", "running"}, {"running", true}}});
    QmpClient qmp(&f.loop);
    std::string event;
    int replies = 0;
    qmp.set_event_handler([&](const std::string& name, const nlohmann::json&) { event = name; });
    qmp.connect(f.sock, 2000ms, [&](Result<void> r) {
      REQUIRE(r.ok());
      peer.emit_event("RESUME");
      qmp.execute("query-status", 1000ms, [&](Result<nlohmann::json> reply) {
        ++replies;
        REQUIRE(reply.ok());
        CHECK((*reply)["status"] == "running");
        qmp.close();
        peer.close();
      });
    });
    f.run();
    CHECK(replies == 1);
    CHECK(event == "RESUME");
    CHECK(peer.commands() == std::vector<std::string>{"qmp_capabilities", "query-status"});
  }
  CHECK(f.finish() == 0);
}

TEST_CASE("qmp: an error reply names the command, QEMU's description and class", "[vm][qmp]") {
  Fixture f;
  {
    FakeQmpPeer peer(&f.loop, f.sock);
    REQUIRE(peer.listen());
    peer.script("migrate", {FakeQmpPeer::Kind::kError, {{"class", "GenericError"}, {"desc", "spawn is denied"}}});
    QmpClient qmp(&f.loop);
    std::string message;
    qmp.connect(f.sock, 2000ms, [&](Result<void> r) {
      REQUIRE(r.ok());
      qmp.execute("migrate", {{"uri", "exec:cat"}}, 1000ms, [&](Result<nlohmann::json> reply) {
        REQUIRE_FALSE(reply.ok());
        message = reply.error().message;
        qmp.close();
        peer.close();
      });
    });
    f.run();
    CHECK(message == "QEMU refused migrate: spawn is denied (GenericError)");
  }
  CHECK(f.finish() == 0);
}

TEST_CASE("qmp: a command QEMU never answers times out, once", "[vm][qmp]") {
  Fixture f;
  {
    FakeQmpPeer peer(&f.loop, f.sock);
    REQUIRE(peer.listen());
    peer.script("stop", {FakeQmpPeer::Kind::kSilent, {}});
    QmpClient qmp(&f.loop);
    int replies = 0;
    std::string message;
    qmp.connect(f.sock, 2000ms, [&](Result<void> r) {
      REQUIRE(r.ok());
      qmp.execute("stop", 50ms, [&](Result<nlohmann::json> reply) {
        ++replies;
        REQUIRE_FALSE(reply.ok());
        message = reply.error().message;
        qmp.close();
        peer.close();
      });
    });
    f.run();
    CHECK(replies == 1);
    CHECK(message == "QEMU did not answer stop in time");
  }
  CHECK(f.finish() == 0);
}

TEST_CASE("qmp: QEMU hanging up fails pending commands and reports the closed connection", "[vm][qmp]") {
  Fixture f;
  {
    FakeQmpPeer peer(&f.loop, f.sock);
    REQUIRE(peer.listen());
    peer.script("cont", {FakeQmpPeer::Kind::kClose, {}});
    QmpClient qmp(&f.loop);
    std::string reply_error, closed;
    qmp.set_closed_handler([&](const std::string& reason) {
      closed = reason;
      peer.close();
    });
    qmp.connect(f.sock, 2000ms, [&](Result<void> r) {
      REQUIRE(r.ok());
      qmp.execute("cont", 5000ms, [&](Result<nlohmann::json> reply) {
        REQUIRE_FALSE(reply.ok());
        reply_error = reply.error().message;
      });
    });
    f.run();
    CHECK(reply_error == "QEMU closed the QMP connection");
    CHECK(closed == "QEMU closed the QMP connection");
    CHECK_FALSE(qmp.ready());
    bool refused = false;
    qmp.execute("cont", 100ms, [&](Result<nlohmann::json> reply) { refused = !reply.ok() && reply.error().code == ErrorCode::kWrongState; });
    CHECK(refused);
  }
  CHECK(f.finish() == 0);
}

TEST_CASE("qmp: a reply that is not JSON ends the connection with a reason", "[vm][qmp]") {
  Fixture f;
  {
    FakeQmpPeer peer(&f.loop, f.sock);
    REQUIRE(peer.listen());
    peer.script("query-status", {FakeQmpPeer::Kind::kGarbage, {}});
    QmpClient qmp(&f.loop);
    std::string message;
    qmp.connect(f.sock, 2000ms, [&](Result<void> r) {
      REQUIRE(r.ok());
      qmp.execute("query-status", 1000ms, [&](Result<nlohmann::json> reply) {
        REQUIRE_FALSE(reply.ok());
        message = reply.error().message;
        peer.close();
      });
    });
    f.run();
    CHECK(message == "QEMU sent a QMP line that is not a JSON object");
  }
  CHECK(f.finish() == 0);
}

TEST_CASE("qmp: a peer that never greets, or greets wrongly, fails the connect", "[vm][qmp]") {
  for (auto greeting : {FakeQmpPeer::Greeting::kNone, FakeQmpPeer::Greeting::kNotJson, FakeQmpPeer::Greeting::kWrongFirst}) {
    Fixture f;
    {
      FakeQmpPeer peer(&f.loop, f.sock);
      peer.set_greeting(greeting);
      REQUIRE(peer.listen());
      QmpClient qmp(&f.loop);
      std::optional<std::string> failure;
      qmp.connect(f.sock, 200ms, [&](Result<void> r) {
        REQUIRE_FALSE(r.ok());
        failure = r.error().message;
        peer.close();
      });
      f.run();
      REQUIRE(failure);
      CHECK_FALSE(failure->empty());
    }
    CHECK(f.finish() == 0);
  }
}

TEST_CASE("qmp: connect waits for a socket QEMU has not made yet, and gives up at the deadline", "[vm][qmp]") {
  Fixture f;
  {
    FakeQmpPeer peer(&f.loop, f.sock);
    QmpClient qmp(&f.loop);
    bool ready = false;
    uv_timer_t later;
    uv_timer_init(&f.loop, &later);
    later.data = &peer;
    uv_timer_start(&later, [](uv_timer_t* t) {
      REQUIRE(static_cast<FakeQmpPeer*>(t->data)->listen());
      uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
    }, 60, 0);
    qmp.connect(f.sock, 2000ms, [&](Result<void> r) {
      ready = r.ok();
      qmp.close();
      peer.close();
    });
    f.run();
    CHECK(ready);

    QmpClient nobody(&f.loop);
    std::string message;
    nobody.connect(f.dir + "/absent.sock", 50ms, [&](Result<void> r) { message = r.ok() ? "" : r.error().message; });
    f.run();
    CHECK(message.find("absent.sock") != std::string::npos);
  }
  CHECK(f.finish() == 0);
}
