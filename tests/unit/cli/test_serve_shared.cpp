// `lockroom serve --stdio` with the per-user shared server (server/serve/), through the real
// binary, without guests: the bridge starts the server when there is none (folder 0700, socket
// 0600), two bridges starting at once meet one server, end of stdin ends only that bridge (exit
// code as LSP says), the server exits on its own once idle, a bridge whose server dies says so
// and exits non-zero, and --standalone keeps everything in its own process. Each test has its
// own state, cache and server folder (LOCKROOM_SERVER_DIR), so it never meets a real server.
// Sandboxes through the shared server are tests/integration/test_reload.cpp.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/editor_process.h"
#include "tests/support/temp_dir.h"

using lockroom::testing::EditorProcess;
using lockroom::testing::TempDir;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> bridge_argv(const TempDir& home, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "LOCKROOM_STATE_DIR=" + (home / "state").string(),
                                   "LOCKROOM_CACHE_DIR=" + (home / "cache").string(),
                                   "LOCKROOM_SERVER_DIR=" + (home / "srv").string(),
                                   LOCKROOM_BINARY,
                                   "serve",
                                   "--stdio",
                                   "--idle-exit",
                                   "1"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// The server's pid, as the bridge reported it on stderr ("connected to the lockroom server (pid N").
int server_pid(const EditorProcess& editor) {
  std::smatch m;
  const std::string& text = editor.stderr_text();
  if (!std::regex_search(text, m, std::regex("lockroom server \\(pid ([0-9]+)"))) return 0;
  return std::stoi(m[1]);
}

std::vector<fs::path> sockets(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".sock") out.push_back(entry.path());
  return out;
}

bool alive(int pid) { return pid > 0 && ::kill(pid, 0) == 0; }

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 15s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

// Ends a server a failed test left behind.
struct ServerReaper {
  int pid = 0;
  ~ServerReaper() {
    if (alive(pid)) ::kill(pid, SIGTERM);
  }
};

}  // namespace

TEST_CASE("serve --stdio: two bridges meet one shared server; end of stdin ends only the bridge", "[cli][shared-server]") {
  TempDir home{"lr-cli"};
  ServerReaper reaper;
  // Both start before either is served: the lock makes them start one server.
  EditorProcess one(bridge_argv(home));
  EditorProcess two(bridge_argv(home));
  one.initialize();
  two.initialize();
  CHECK(one.result("lockroom/echo", json{{"from", 1}}) == json{{"from", 1}});
  CHECK(two.result("lockroom/echo", json{{"from", 2}}) == json{{"from", 2}});
  int pid = server_pid(one);
  reaper.pid = pid;
  INFO("bridge 1: " << one.stderr_text() << "\nbridge 2: " << two.stderr_text());
  REQUIRE(pid > 0);
  CHECK(server_pid(two) == pid);
  CHECK(pid != 0);

  // The folder is private, the socket too.
  struct stat st {};
  REQUIRE(::stat((home / "srv").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  auto socks = sockets(home / "srv");
  REQUIRE(socks.size() == 1);
  REQUIRE(::stat(socks[0].c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(one.result("sandbox/list", json::object()) == json{{"sandboxes", json::array()}});

  // The first window goes away without shutdown: its bridge exits 1 (LSP's code), the server stays.
  one.close_stdin();
  CHECK(one.wait_exit() == 1);
  CHECK(alive(pid));
  CHECK(two.result("lockroom/echo", json{{"still", true}}) == json{{"still", true}});

  // The second one says goodbye properly: 0.
  CHECK(two.result("shutdown", nullptr).is_null());
  two.notify("exit", nullptr);
  CHECK(two.wait_exit() == 0);

  // No connection, no sandbox: the server exits on its own (--idle-exit 1) and takes its socket.
  CHECK(eventually([&] { return !alive(pid); }));
  CHECK(sockets(home / "srv").empty());
  // The server's log is in the state folder.
  CHECK(fs::exists(home / "state" / "server.log"));
}

TEST_CASE("serve --stdio: when the shared server dies, the bridge says so and exits non-zero", "[cli][shared-server]") {
  TempDir home{"lr-cli"};
  ServerReaper reaper;
  EditorProcess editor(bridge_argv(home));
  editor.initialize();
  int pid = server_pid(editor);
  reaper.pid = pid;
  REQUIRE(pid > 0);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int code = editor.wait_exit();
  INFO(editor.stderr_text());
  CHECK(code == 1);
  CHECK(editor.stderr_text().find("went away") != std::string::npos);

  // The next bridge starts a new server over the stale socket.
  EditorProcess next(bridge_argv(home));
  next.initialize();
  int next_pid = server_pid(next);
  reaper.pid = next_pid;
  CHECK(next_pid > 0);
  CHECK(next_pid != pid);
  next.close_stdin();
  CHECK(next.wait_exit() == 1);
}

TEST_CASE("serve --stdio --standalone: no shared server, no server folder", "[cli][shared-server]") {
  TempDir home{"lr-cli"};
  EditorProcess editor(bridge_argv(home, {"--standalone"}));
  editor.initialize();
  CHECK(editor.result("lockroom/echo", json{{"a", 1}}) == json{{"a", 1}});
  CHECK(editor.result("sandbox/list", json::object()) == json{{"sandboxes", json::array()}});
  editor.close_stdin();
  CHECK(editor.wait_exit() == 1);
  CHECK_FALSE(fs::exists(home / "srv"));
  CHECK(server_pid(editor) == 0);
}
