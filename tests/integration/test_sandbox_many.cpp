// Many sandboxes at once: twenty created concurrently from one template, all alive together,
// each answering with its own output, then all destroyed with nothing left behind.
#include <algorithm>
#include <csignal>
#include <set>

#include "tests/integration/sandbox_world.h"

using namespace lockroom;
using namespace lockroom::testing;

TEST_CASE("twenty sandboxes alive at once, each answering", "[sandbox][scale]") {
  World& w = world();
  constexpr int kCount = 20;
  std::vector<std::optional<Result<core::CreateResult>>> created(kCount);
  for (int i = 0; i < kCount; ++i)
    w.manager->create({}, nullptr, [&created, i](Result<core::CreateResult> r) { created[i] = std::move(r); });
  w.run_until([&] {
    for (const auto& c : created)
      if (!c) return false;
    return true;
  }, 300s);

  std::vector<std::string> ids;
  for (auto& c : created) {
    INFO((c->ok() ? std::string() : c->error().message));
    REQUIRE(c->ok());
    ids.push_back((*c)->sandbox_id);
  }
  CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == kCount);

  // All twenty are running at the same time, each with its own QEMU.
  std::set<int> qemu_pids;
  for (const auto& s : w.manager->list())
    if (std::find(ids.begin(), ids.end(), s.id) != ids.end()) {
      CHECK(s.state == core::SandboxState::kReady);
      qemu_pids.insert(s.qemu_pid);
    }
  CHECK(qemu_pids.size() == kCount);
  CHECK_FALSE(qemu_pids.count(0));

  // Each answers, with its own output (the sandbox index echoed back).
  std::vector<std::string> pids;
  for (int i = 0; i < kCount; ++i) pids.push_back(w.start(ids[i], {"sh", "-c", "echo sandbox-" + std::to_string(i)}));
  for (int i = 0; i < kCount; ++i) {
    auto exit = w.wait_exit(pids[i]);
    CHECK(exit.exit_code == 0);
    CHECK(w.events.output[pids[i]] == "sandbox-" + std::to_string(i) + "\n");
  }

  for (const auto& id : ids) w.destroy(id);
  for (int pid : qemu_pids) CHECK(kill(pid, 0) == -1);  // every QEMU is gone
  for (const auto& id : ids) CHECK(w.events.reached(id, core::SandboxState::kGone));
}
