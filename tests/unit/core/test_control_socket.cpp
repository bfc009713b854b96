// A control socket and its blocking client over a real unix socket on a real loop: the file is
// private and goes with the object, calls reach exactly the methods bound, peers past the limit
// and over-long lines are refused without harming the others, and the client checks who serves
// the socket and reports a server that goes away mid-call.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "server/api/control_client.h"
#include "server/api/control_socket.h"
#include "tests/unit/core/test_control_util.h"
#include "tests/unit/uv_test_util.h"

using namespace lockroom;
using namespace lockroom::api;
using namespace std::chrono_literals;
using lockroom::testing::TestLoop;
using lockroom::testing::TempDir;
using lockroom::testing::while_looping;
using protocol::json;
namespace fs = std::filesystem;

namespace {

// A server with one method, test/echo, answering its params.
std::unique_ptr<ControlSocket> echo_server(uv_loop_t* loop, const fs::path& path) {
  auto socket = ControlSocket::listen(loop, path, [](rpc::Dispatcher& d) {
    d.on_request("test/echo", [](json params, rpc::Reply reply) { reply.result(std::move(params)); });
  });
  REQUIRE(socket.ok());
  return std::move(*socket);
}

core::SandboxRecord record_for(const fs::path& socket, int owner_pid) {
  core::SandboxRecord r;
  r.id = "sb-test01";
  r.owner_pid = owner_pid;
  r.control_socket = socket;
  return r;
}

int raw_connect(const fs::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.native().size());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// Runs the loop until `fd` has a byte or end of input; returns what a read gives.
ssize_t read_while_looping(TestLoop& loop, int fd, std::string& out) {
  for (int i = 0; i < 5000; ++i) {
    loop.run_once();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1) == 1) {
      char buf[65536];
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) out.append(buf, static_cast<std::size_t>(n));
      return n;
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("a control socket is private, answers its bound methods only, and goes with its object", "[control]") {
  TestLoop loop;
  TempDir dir("lockroom-control");
  fs::path path = dir.path() / "control.sock";
  {
    auto server = echo_server(loop.get(), path);
    struct stat st{};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);

    auto record = record_for(path, static_cast<int>(getpid()));
    auto results = while_looping(loop.get(), [&] {
      std::vector<Result<json>> out;
      auto client = ControlClient::connect(record);
      if (!client) return std::vector<Result<json>>{client.error()};
      out.push_back(client->call("test/echo", json{{"x", 1}, {"text", std::string(200000, 'y')}}, 5s));
      out.push_back(client->call("test/echo", json{{"n", 2}}, 5s));
      out.push_back(client->call("sandbox/create", json::object(), 5s));
      return out;
    });
    REQUIRE(results.size() == 3);
    auto& echoed = results[0];
    auto& again = results[1];
    auto& unknown = results[2];
    REQUIRE(echoed.ok());
    CHECK((*echoed)["x"] == 1);
    CHECK((*echoed)["text"].get<std::string>().size() == 200000);
    REQUIRE(again.ok());
    CHECK((*again)["n"] == 2);
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().message.find("unknown method \"sandbox/create\"") != std::string::npos);
    CHECK(server->refused_peers() == 0);
  }
  CHECK_FALSE(fs::exists(path));
  CHECK(loop.finish() == 0);
}

TEST_CASE("peers past the limit are closed at once, the others keep working", "[control]") {
  TestLoop loop;
  TempDir dir("lockroom-control");
  fs::path path = dir.path() / "control.sock";
  auto server = echo_server(loop.get(), path);
  std::vector<int> fds;
  for (std::size_t i = 0; i < ControlSocket::kMaxClients + 1; ++i) {
    fds.push_back(raw_connect(path));
    for (int turn = 0; turn < 20; ++turn) loop.run_once();
  }
  for (int i = 0; i < 2000 && server->refused_peers() == 0; ++i) {
    loop.run_once();
    usleep(500);
  }
  CHECK(server->clients() == ControlSocket::kMaxClients);
  CHECK(server->refused_peers() == 1);
  std::string out;
  CHECK(read_while_looping(loop, fds.back(), out) == 0);  // the last one: closed
  std::string request = R"({"jsonrpc":"2.0","id":7,"method":"test/echo","params":{"ok":true}})" "\n";
  REQUIRE(::write(fds.front(), request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  while (out.find('\n') == std::string::npos && read_while_looping(loop, fds.front(), out) > 0) {}
  CHECK(json::parse(out.substr(0, out.find('\n')))["result"]["ok"] == true);
  for (int fd : fds) ::close(fd);
  for (int i = 0; i < 2000 && server->clients() > 0; ++i) {
    loop.run_once();
    usleep(500);
  }
  CHECK(server->clients() == 0);  // every peer that hung up was let go
  server.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("an over-long request line is refused and skipped, the next request is answered", "[control]") {
  TestLoop loop;
  TempDir dir("lockroom-control");
  fs::path path = dir.path() / "control.sock";
  auto server = echo_server(loop.get(), path);
  int fd = raw_connect(path);
  std::string junk(ControlSocket::kMaxRequestBytes + 1000, 'x');
  std::string request = junk + "\n" + R"({"jsonrpc":"2.0","id":1,"method":"test/echo","params":[5]})" "\n";
  std::atomic<bool> written{false};
  std::thread writer([&] {
    std::size_t done = 0;
    while (done < request.size()) {
      ssize_t n = ::write(fd, request.data() + done, request.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    written = true;
  });
  std::string out;
  while (std::count(out.begin(), out.end(), '\n') < 2 && read_while_looping(loop, fd, out) > 0) {}
  writer.join();
  CHECK(written);
  auto first = json::parse(out.substr(0, out.find('\n')));
  CHECK(first["error"]["code"] == -32700);
  CHECK(first["id"].is_null());
  auto second = json::parse(out.substr(out.find('\n') + 1));
  CHECK(second["id"] == 1);
  CHECK(second["result"] == json::array({5}));
  ::close(fd);
  server.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("the client talks only to the record's owner and says when nobody answers", "[control]") {
  TestLoop loop;
  TempDir dir("lockroom-control");
  fs::path path = dir.path() / "control.sock";
  auto missing = ControlClient::connect(record_for(path, static_cast<int>(getpid())));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("does not answer on " + path.string()) != std::string::npos);

  auto server = echo_server(loop.get(), path);
  auto impostor = while_looping(loop.get(), [&] { return ControlClient::connect(record_for(path, static_cast<int>(getpid()) + 100000)); });
  REQUIRE_FALSE(impostor.ok());
  CHECK(impostor.error().message.find("is not served by sandbox sb-test01's owner") != std::string::npos);
  server.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("a server that goes away during a call is reported, not waited for", "[control]") {
  TestLoop loop;
  TempDir dir("lockroom-control");
  fs::path path = dir.path() / "control.sock";
  std::optional<rpc::Reply> held;
  auto made = ControlSocket::listen(loop.get(), path, [&](rpc::Dispatcher& d) {
    d.on_request("test/hold", [&](json, rpc::Reply reply) { held = reply; });
  });
  REQUIRE(made.ok());
  std::unique_ptr<ControlSocket> server = std::move(*made);
  std::optional<Result<json>> outcome;
  auto record = record_for(path, static_cast<int>(getpid()));
  std::atomic<bool> answered{false};
  std::thread client_thread([&] {
    auto client = ControlClient::connect(record);
    outcome.emplace(client ? client->call("test/hold", json::object(), 10s) : Result<json>(client.error()));
    answered = true;
  });
  auto started = std::chrono::steady_clock::now();
  while (!held && std::chrono::steady_clock::now() - started < 5s) {
    loop.run_once();
    usleep(500);
  }
  if (!held) server.reset();  // so the client thread ends before the test fails
  if (!held) client_thread.join();
  REQUIRE(held);
  server.reset();  // the owner ends the sandbox while the call waits
  held.reset();
  while (!answered && std::chrono::steady_clock::now() - started < 8s) {
    loop.run_once();
    usleep(500);
  }
  client_thread.join();
  REQUIRE(outcome);
  REQUIRE_FALSE(outcome->ok());
  CHECK(outcome->error().message.find("closed the control connection before answering test/hold") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - started < 8s);
  CHECK(loop.finish() == 0);
}
