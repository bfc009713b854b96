// `lockroom kill` from another process: the sandbox's record is found in the state dir, its QEMU
// killed, and the owning manager reports the sandbox ended with reason `killed` (not a crash),
// its processes each with one exit.
#include <unistd.h>

#include "server/core/sandbox_registry.h"
#include "tests/integration/sandbox_world.h"

using namespace lockroom;
using namespace lockroom::testing;

TEST_CASE("a sandbox killed through its record ends with reason killed", "[sandbox][kill]") {
  World& w = world();
  std::string sb = w.create();
  std::string p = w.start(sb, {"sleep", "100"});

  auto records = core::read_sandbox_records(w.state.dir);
  auto record = core::find_sandbox_record(records, sb);
  REQUIRE(record.ok());
  CHECK(record->owner_pid == getpid());
  CHECK(record->qemu_pid > 0);
  REQUIRE(core::kill_sandbox(*record, 777).ok());

  auto exit = w.wait_exit(p);
  CHECK(exit.reason == core::ProcessEndReason::kSandboxGone);
  w.run_until([&] { return w.events.reached(sb, core::SandboxState::kGone) || w.events.reached(sb, core::SandboxState::kFailed); });
  bool killed = false;
  for (const auto& [id, state, reason] : w.events.states)
    if (id == sb && reason == core::StopReason::kKilled) killed = true;
  CHECK(killed);
  CHECK(w.events.reached(sb, core::SandboxState::kGone));
  CHECK_FALSE(std::filesystem::exists(record->state_dir));  // the record goes with the sandbox
  CHECK_FALSE(core::find_sandbox_record(core::read_sandbox_records(w.state.dir), sb).ok());
}
