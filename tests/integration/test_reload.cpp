// A window reload loses nothing: real `lockroom serve --stdio` bridge processes, one shared
// server (an isolated server folder, LOCKROOM_SERVER_DIR), real guests.
//
// Window 1 creates a sandbox with a workspace and starts a process that changes a file and then
// prints a line every 100 ms; its stdin is closed mid-output (the reload). Window 2 lists the
// sandbox (detached), attaches it, gets the lines printed meanwhile (none lost, none twice) and
// then the live ones and process/exited; changes/list still works. A third window does not see
// the sandbox while window 2 has it. When window 2 goes too, the sandbox (which holds an
// unapplied change) outlives the short grace and is destroyed after the longer one.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/editor_process.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

using lockroom::testing::EditorProcess;
using lockroom::testing::TempDir;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int kLines = 80;

std::vector<std::string> bridge_argv(const TempDir& home) {
  return {"/usr/bin/env",
          "LOCKROOM_STATE_DIR=" + (home / "state").string(),
          "LOCKROOM_SERVER_DIR=" + (home / "srv").string(),
          LOCKROOM_BINARY,
          "serve",
          "--stdio",
          "--log-level",
          "debug",
          "--idle-exit",
          "2",
          "--detached-grace",
          "6",
          "--detached-changes-grace",
          "14"};
}

// All process/output text of `process_id` that `editor` got, in order.
std::string output_of(const EditorProcess& editor, const std::string& process_id) {
  std::string out;
  for (const auto& p : editor.notified("process/output"))
    if (p.value("processId", "") == process_id) out += p.value("data", "");
  return out;
}

// The numbers of the "line N" lines in `text`, in order.
std::vector<int> line_numbers(const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while ((at = text.find("line ", at)) != std::string::npos) {
    at += 5;
    out.push_back(std::stoi(text.substr(at)));
  }
  return out;
}

std::optional<json> listed(EditorProcess& editor, const std::string& sandbox_id) {
  json list = editor.result("sandbox/list", json::object());
  for (const auto& s : list["sandboxes"])
    if (s["sandboxId"] == sandbox_id) return s;
  return std::nullopt;
}

}  // namespace

TEST_CASE("reload: a sandbox outlives its window, and the next window attaches it and misses nothing", "[integration][reload]") {
  TempDir home{"lr-reload"};
  TempDir workspace{"lr-reload-ws"};
  workspace.write("a.txt", "original\n");
  lockroom::testing::sh("cd " + workspace.path().string() +
                        " && git init -q -b main && git -c user.name=t -c user.email=t@t add -A && git -c user.name=t -c user.email=t@t commit -q -m initial");

  EditorProcess one(bridge_argv(home));
  one.initialize();
  json created = one.result("sandbox/create", json{{"workspace", {{"path", workspace.path().string()}}}}, 900s);
  std::string sandbox = created["sandboxId"];
  std::string script = "echo changed > /workspace/a.txt; i=0; while [ $i -lt " + std::to_string(kLines) +
                       " ]; do echo line $i; i=$((i+1)); sleep 0.1; done";
  std::string process = one.result("process/start", json{{"sandboxId", sandbox}, {"argv", {"sh", "-c", script}}})["processId"];
  REQUIRE(one.pump_until([&] { return line_numbers(output_of(one, process)).size() >= 5; }, 60s));

  // The reload: window 1's stdin closes mid-output. Its bridge exits; the sandbox stays.
  one.close_stdin();
  CHECK(one.wait_exit() == 1);
  std::vector<int> seen_by_one = line_numbers(output_of(one, process));
  REQUIRE_FALSE(seen_by_one.empty());
  std::this_thread::sleep_for(1s);  // it goes on printing, detached

  EditorProcess two(bridge_argv(home));
  two.initialize();
  auto entry = listed(two, sandbox);
  REQUIRE(entry);
  CHECK((*entry)["attached"] == false);
  CHECK((*entry)["detachedMs"].get<int>() >= 1000);
  CHECK((*entry)["state"] == "ready");

  json attached = two.result("sandbox/attach", json{{"sandboxId", sandbox}});
  INFO(attached.dump());
  CHECK(attached["sandbox"]["sandboxId"] == sandbox);
  CHECK(attached["sandbox"]["attached"] == true);
  REQUIRE(attached["processes"].size() == 1);
  CHECK(attached["processes"][0]["processId"] == process);
  CHECK(attached["replay"]["droppedOutputBytes"] == 0);
  CHECK(attached["replay"]["outputBytes"].get<int>() > 0);  // lines printed while detached
  CHECK(attached["detachedMs"].get<int>() >= 1000);
  CHECK(two.error("sandbox/attach", json{{"sandboxId", sandbox}})["data"]["kind"] == "wrongState");

  // A third window does not see a sandbox another live window has.
  EditorProcess three(bridge_argv(home));
  three.initialize();
  CHECK_FALSE(listed(three, sandbox).has_value());
  CHECK(three.error("sandbox/attach", json{{"sandboxId", sandbox}})["data"]["kind"] == "wrongState");

  // Window 2 gets the rest: the replay, then live output, then the exit.
  REQUIRE(two.pump_until([&] {
    for (const auto& p : two.notified("process/exited"))
      if (p["processId"] == process) return true;
    return false;
  }, 120s));
  std::vector<int> seen_by_two = line_numbers(output_of(two, process));
  INFO("window 1 saw " << seen_by_one.size() << " lines, window 2 " << seen_by_two.size());
  // Together, every line exactly once and in order: nothing lost at the reload, nothing twice.
  std::vector<int> all = seen_by_one;
  all.insert(all.end(), seen_by_two.begin(), seen_by_two.end());
  std::vector<int> expected;
  for (int i = 0; i < kLines; ++i) expected.push_back(i);
  CHECK(all == expected);
  for (const auto& p : two.notified("process/exited"))
    if (p["processId"] == process) CHECK(p["exitCode"] == 0);

  // The workspace survived: the change made before the reload is there to review.
  json changes = two.result("changes/list", json{{"sandboxId", sandbox}}, 120s);
  REQUIRE(changes["files"].size() == 1);
  CHECK(changes["files"][0]["path"] == "a.txt");
  CHECK(changes["files"][0]["status"] == "modified");

  // Window 2 goes too. Past the short grace (6 s) the sandbox is kept — it holds a change not
  // applied yet — and past the longer one (14 s) it is destroyed.
  auto detached_at = std::chrono::steady_clock::now();
  two.close_stdin();
  CHECK(two.wait_exit() == 1);
  auto deadline = detached_at + 10s;
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(200ms);
  auto still = listed(three, sandbox);
  REQUIRE(still);
  CHECK((*still)["attached"] == false);
  bool gone = false;
  auto give_up = detached_at + 90s;
  while (!gone && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(500ms);
    gone = !listed(three, sandbox).has_value();
  }
  CHECK(gone);
  CHECK(std::chrono::steady_clock::now() - detached_at >= 14s);
  std::string log = lockroom::testing::read_file(home / "state" / "server.log");
  CHECK(log.find("destroying it: no editor attached it") != std::string::npos);
  CHECK(log.find("holds unapplied changes") != std::string::npos);

  CHECK(three.result("shutdown", nullptr).is_null());
  three.notify("exit", nullptr);
  CHECK(three.wait_exit() == 0);
}
