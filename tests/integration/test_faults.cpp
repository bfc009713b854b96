// Faults the way machines break them, against the real `lockroom serve --stdio` binary with real
// guests (docs/reliability.md, "Faults"): lockroom itself killed with SIGKILL while sandboxes run,
// and the editor closing stdin in the middle of a create.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/editor_process.h"
#include "tests/support/temp_dir.h"

using lockroom::testing::EditorProcess;
using lockroom::testing::TempDir;
using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> standalone_argv(const TempDir& home) {
  return {"/usr/bin/env", "LOCKROOM_STATE_DIR=" + (home / "state").string(), LOCKROOM_BINARY, "serve", "--stdio", "--standalone",
          "--log-level", "info"};
}

// QEMU processes whose command line names `state` (this test's state dir).
std::vector<int> qemus_under(const fs::path& state) {
  std::vector<int> out;
  for (const auto& proc : fs::directory_iterator("/proc")) {
    std::string name = proc.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(proc.path() / "cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), {});
    if (text.find("qemu-system") != std::string::npos && text.find(state.string()) != std::string::npos) out.push_back(std::stoi(name));
  }
  return out;
}

// Entries under <state>/vms and <state>/templates that the lockroom with `pid` made.
std::vector<fs::path> left_by(const fs::path& state, int pid) {
  std::vector<fs::path> out;
  for (const char* sub : {"vms", "templates"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state / sub, ec))
      if (e.path().filename().string().rfind(std::to_string(pid) + "-", 0) == 0) out.push_back(e.path());
  }
  return out;
}

template <typename Pred>
bool eventually(Pred done, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

}  // namespace

TEST_CASE("fault: lockroom killed with SIGKILL while three sandboxes run; the next start clears what it left and says so", "[integration][faults]") {
  TempDir home{"lr-faults"};
  fs::path state = home / "state";
  int killed_pid = 0;
  {
    EditorProcess editor(standalone_argv(home));
    editor.initialize();
    for (int i = 0; i < 3; ++i) {
      json created = editor.result("sandbox/create", json::object(), 300s);
      editor.result("process/start", {{"sandboxId", created["sandboxId"]}, {"argv", {"sleep", "600"}}});
    }
    REQUIRE(qemus_under(state).size() >= 3);
    killed_pid = editor.pid();
    REQUIRE(::kill(killed_pid, SIGKILL) == 0);
    CHECK(editor.wait_exit(30s) == -1);  // killed, not exited
  }
  // QEMU dies with the lockroom that started it (PR_SET_PDEATHSIG); its state dirs and RAM files stay.
  CHECK(eventually([&] { return qemus_under(state).empty(); }, 20s));
  std::vector<fs::path> left = left_by(state, killed_pid);
  INFO("left behind: " << left.size());
  REQUIRE(left.size() >= 3);

  // The next lockroom start finds them, removes them and says so.
  EditorProcess next(standalone_argv(home));
  next.initialize();
  CHECK(left_by(state, killed_pid).empty());
  for (const auto& path : left) CHECK_FALSE(fs::exists(path));
  INFO(next.stderr_text());
  CHECK(next.stderr_text().find("left by a lockroom that is gone") != std::string::npos);
  json list = next.result("sandbox/list", json::object());
  CHECK(list["sandboxes"].empty());
  next.result("shutdown", nullptr);
  next.notify("exit", nullptr);
  CHECK(next.wait_exit(60s) == 0);
  CHECK(qemus_under(state).empty());
}

TEST_CASE("fault: the editor closes stdin in the middle of a create; nothing is left running", "[integration][faults]") {
  TempDir home{"lr-faults-create"};
  fs::path state = home / "state";
  EditorProcess editor(standalone_argv(home));
  editor.initialize();
  // The create is sent and stdin closed at once, while the guest is being restored.
  editor.send_request("sandbox/create", json::object());
  editor.close_stdin();
  CHECK(editor.wait_exit(120s) == 1);  // ended without shutdown: LSP's exit status 1
  INFO(editor.stderr_text());
  CHECK(eventually([&] { return qemus_under(state).empty(); }, 20s));
  CHECK(left_by(state, editor.pid()).empty());
}
