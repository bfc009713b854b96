// Finding the sandbox a user named (and saying why it cannot be reached), and the endpoints a
// process serves for its sandboxes: opened when a sandbox is ready, recorded in its
// sandbox.json, limited to the review methods of that one sandbox, gone when it stops. A real
// SandboxManager answers (with no guest: these cases need none).
#include <catch2/catch.hpp>

#include <unistd.h>

#include "server/api/control_client.h"
#include "server/api/control_endpoints.h"
#include "server/core/sandbox_registry.h"
#include "server/vm/vm.h"
#include "tests/unit/core/test_control_util.h"
#include "tests/unit/uv_test_util.h"

using namespace lockroom;
using namespace lockroom::api;
using namespace std::chrono_literals;
using lockroom::testing::TempDir;
using lockroom::testing::TestLoop;
using lockroom::testing::while_looping;
using protocol::json;
namespace fs = std::filesystem;

namespace {

const int kSelf = static_cast<int>(getpid());
constexpr int kGoneOwner = 999999;

// Writes a record as the manager does, in its own VM state dir under `root`.
core::SandboxRecord publish(const fs::path& root, const std::string& id, int owner, std::int64_t created, fs::path socket = {}) {
  core::SandboxRecord r;
  r.id = id;
  r.owner_pid = owner;
  r.qemu_pid = 1;
  r.created_unix_ms = created;
  r.control_socket = std::move(socket);
  r.state_dir = vm::vm_state_root(root) / (std::to_string(owner) + "-" + std::to_string(created) + "-sandbox");
  fs::create_directories(r.state_dir);
  REQUIRE(core::write_sandbox_record(r).ok());
  return r;
}

bool alive(int pid) { return pid == kSelf; }

struct Recorder final : core::SandboxEvents {
  std::vector<std::pair<std::string, core::SandboxState>> states;
  void state_changed(const std::string& id, core::SandboxState s, core::StopReason, const std::string&) override { states.emplace_back(id, s); }
  void process_output(const std::string&, core::OutputStream, const core::OutputChunk&) override {}
  void process_exited(const std::string&, const core::ProcessExit&) override {}
};

}  // namespace

TEST_CASE("the named sandbox is found by id or prefix, otherwise the error says what exists", "[control]") {
  TempDir root("lockroom-control-root");
  auto none = find_control_target(root.path(), "sb-1", alive);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == "no sandbox 'sb-1': no sandboxes are running");

  publish(root.path(), "sb-aaaa11", kSelf, 1, "/some/where/control.sock");
  publish(root.path(), "sb-bbbb22", kSelf, 2);
  publish(root.path(), "sb-cccc33", kGoneOwner, 3, "/gone/control.sock");

  auto found = find_control_target(root.path(), "sb-aaaa", alive);
  REQUIRE(found.ok());
  CHECK(found->id == "sb-aaaa11");
  CHECK(found->control_socket == "/some/where/control.sock");  // the record round-trips the socket

  auto no_socket = find_control_target(root.path(), "sb-bbbb22", alive);
  REQUIRE_FALSE(no_socket.ok());
  CHECK(no_socket.error().message.find("serves no control socket") != std::string::npos);

  auto gone = find_control_target(root.path(), "sb-cccc", alive);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == ErrorCode::kNotFound);
  CHECK(gone.error().message == "sandbox sb-cccc33 is gone: its owner, process 999999, no longer runs (its changes went with it)");

  auto missing = find_control_target(root.path(), "sb-zz", alive);
  REQUIRE_FALSE(missing.ok());
  std::string self = std::to_string(kSelf);
  CHECK(missing.error().message ==
        "no sandbox 'sb-zz'; running: sb-aaaa11 (process " + self + "), sb-bbbb22 (process " + self + ")");

  auto ambiguous = find_control_target(root.path(), "sb-", alive);
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(ambiguous.error().message.find("more than one sandbox") != std::string::npos);
}

TEST_CASE("a ready sandbox gets a control socket with the review methods of that sandbox only", "[control]") {
  TestLoop loop;
  TempDir root("lockroom-control-root");
  auto published = publish(root.path(), "sb-ep0001", kSelf, 1);
  Recorder inner;
  {
    ControlEndpoints endpoints(loop.get(), root.path(), inner);
    core::ManagerConfig config;
    config.paths.cache = root.path() / "cache";
    config.paths.state = root.path();
    core::SandboxManager manager(loop.get(), config, endpoints);
    endpoints.attach(manager);

    auto unknown = endpoints.open("sb-nothere");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().message.find("sandbox sb-nothere has no record") != std::string::npos);

    endpoints.state_changed("sb-ep0001", core::SandboxState::kReady, core::StopReason::kNone, "");
    REQUIRE(inner.states.size() == 1);  // passed on
    CHECK(endpoints.open_count() == 1);
    fs::path socket = published.state_dir / kControlSocketName;
    CHECK(fs::exists(socket));
    auto target = find_control_target(root.path(), "sb-ep", alive);
    REQUIRE(target.ok());
    CHECK(target->control_socket == socket);
    CHECK(target->qemu_pid == 1);  // the rest of the record is kept

    auto answers = while_looping(loop.get(), [&] {
      std::vector<Result<json>> out;
      auto client = ControlClient::connect(*target);
      if (!client) return std::vector<Result<json>>{client.error()};
      out.push_back(client->call("changes/list", json{{"sandboxId", "sb-ep0001"}}, 5s));
      out.push_back(client->call("changes/diff", json{{"sandboxId", "sb-other"}}, 5s));
      out.push_back(client->call("changes/apply", json{{"mode", "worktree"}}, 5s));
      for (const char* method : {"workspace/sync", "sandbox/create", "process/start", "sandbox/destroy"})
        out.push_back(client->call(method, json{{"sandboxId", "sb-ep0001"}}, 5s));
      return out;
    });
    REQUIRE(answers.size() == 7);
    REQUIRE_FALSE(answers[0].ok());  // reached the manager, which has no such live sandbox
    CHECK(answers[0].error().message.find("no sandbox sb-ep0001") != std::string::npos);
    REQUIRE_FALSE(answers[1].ok());
    CHECK(answers[1].error().code == ErrorCode::kNotFound);
    CHECK(answers[1].error().message.find("serves sandbox sb-ep0001 only") != std::string::npos);
    REQUIRE_FALSE(answers[2].ok());
    CHECK(answers[2].error().code == ErrorCode::kInvalidInput);
    CHECK(answers[2].error().message.find("sandboxId") != std::string::npos);
    for (std::size_t i = 3; i < answers.size(); ++i) {
      REQUIRE_FALSE(answers[i].ok());
      CHECK(answers[i].error().message.find("unknown method") != std::string::npos);
    }

    endpoints.state_changed("sb-ep0001", core::SandboxState::kStopping, core::StopReason::kDestroyed, "");
    CHECK(endpoints.open_count() == 0);
    CHECK_FALSE(fs::exists(socket));
    CHECK(inner.states.size() == 2);
  }
  CHECK(loop.finish() == 0);
}
