// Sandboxes end to end with the real agent: SandboxManager creates sandboxes by restoring a
// template it boots itself, runs processes in them, and handles limits and faults. The world
// (one manager, so one template boot per executable) is in sandbox_world.h.
#include <csignal>
#include <fstream>
#include <set>

#include "tests/integration/sandbox_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using namespace std::chrono_literals;


TEST_CASE("a command runs in a restored sandbox: output, exit code, no network interface", "[sandbox]") {
  World& w = world();
  std::string sb = w.create();
  std::string p = w.start(sb, {"sh", "-c", "echo out; ls /sys/class/net; exit 3"});
  auto exit = w.wait_exit(p);
  CHECK(exit.exit_code == 3);
  CHECK(w.events.output[p] == "out\nlo\n");
  w.destroy(sb);
  CHECK(w.events.reached(sb, core::SandboxState::kGone));
}

TEST_CASE("the editor hears of a sandbox only once its create answered (ready right before the answer and nothing for a failed create)", "[sandbox]") {
  World& w = world();
  std::size_t before = w.events.states.size(), alive_before = w.manager->list().size();
  // A create whose guest starts but whose workspace cannot be read fails as a whole; the sandbox
  // it started is destroyed without a word to the editor, which never got its id.
  core::CreateRequest broken;
  broken.workspace = core::WorkspaceRequest{"/nonexistent/lockroom-test-workspace", {}, {}};
  std::optional<Result<core::CreateResult>> failed;
  w.manager->create(broken, nullptr, [&](Result<core::CreateResult> r) { failed = std::move(r); });
  w.run_until([&] { return failed.has_value(); });
  REQUIRE_FALSE(failed->ok());
  CHECK(failed->error().message.find("lockroom-test-workspace") != std::string::npos);
  w.run_until([&] { return w.manager->list().size() == alive_before; });  // the started guest is gone again

  std::size_t states_at_answer = 0;
  std::optional<Result<core::CreateResult>> created;
  w.manager->create({}, nullptr, [&](Result<core::CreateResult> r) {
    states_at_answer = w.events.states.size();
    created = std::move(r);
  });
  w.run_until([&] { return created.has_value(); });
  REQUIRE(created->ok());
  std::string sb = (*created)->sandbox_id;
  w.destroy(sb);
  std::vector<std::tuple<std::string, core::SandboxState, core::StopReason>> heard(w.events.states.begin() + before, w.events.states.end());
  for (const auto& [id, state, reason] : heard) CHECK(id == sb);
  REQUIRE(heard.size() >= 2);
  CHECK(std::get<1>(heard[0]) == core::SandboxState::kReady);
  CHECK(states_at_answer == before + 1);  // `ready` came right before the answer
  CHECK(std::get<1>(heard.back()) == core::SandboxState::kGone);

  // A create whose caller finishes it (the editor face runs the kits' setup first): nothing until
  // announce(), and nothing at all when the caller gives up and destroys it instead.
  auto held_create = [&] {
    core::CreateRequest held;
    held.caller_announces = true;
    std::optional<Result<core::CreateResult>> r;
    w.manager->create(held, nullptr, [&](Result<core::CreateResult> v) { r = std::move(v); });
    w.run_until([&] { return r.has_value(); });
    REQUIRE(r->ok());
    return (*r)->sandbox_id;
  };
  std::size_t quiet = w.events.states.size();
  std::string given_up = held_create();
  w.destroy(given_up);
  CHECK(w.events.states.size() == quiet);
  std::string held = held_create();
  CHECK(w.events.states.size() == quiet);
  w.manager->announce(held);
  REQUIRE(w.events.states.size() == quiet + 1);
  CHECK(std::get<0>(w.events.states.back()) == held);
  CHECK(std::get<1>(w.events.states.back()) == core::SandboxState::kReady);
  w.destroy(held);
  CHECK(w.events.reached(held, core::SandboxState::kGone));
}

TEST_CASE("two sandboxes restored from one template do not share random state", "[sandbox]") {
  World& w = world();
  std::string a = w.create(), b = w.create();
  std::string pa = w.start(a, {"sh", "-c", "head -c 16 /dev/urandom | od -An -tx1"});
  std::string pb = w.start(b, {"sh", "-c", "head -c 16 /dev/urandom | od -An -tx1"});
  w.wait_exit(pa);
  w.wait_exit(pb);
  CHECK(w.events.output[pa].size() > 30);
  CHECK(w.events.output[pa] != w.events.output[pb]);
  w.destroy(a);
  w.destroy(b);
}

TEST_CASE("a restored sandbox has the host's wall-clock time, not the template's", "[sandbox]") {
  World& w = world();
  std::string sb = w.create();
  std::string p = w.start(sb, {"date", "+%s"});
  w.wait_exit(p);
  long guest = std::stol(w.events.output[p]);
  CHECK(std::abs(guest - static_cast<long>(time(nullptr))) <= 5);
  w.destroy(sb);
}

TEST_CASE("destroying a sandbox ends its running processes, each with one exit", "[sandbox]") {
  World& w = world();
  std::string sb = w.create();
  std::string p = w.start(sb, {"sleep", "600"});
  w.destroy(sb);
  REQUIRE(w.events.exits.count(p));
  CHECK(w.events.exits[p].reason == core::ProcessEndReason::kSandboxGone);
  CHECK(w.events.reached(sb, core::SandboxState::kGone));
  // The sandbox is gone for good: a new process is refused with the reason.
  std::optional<Result<std::string>> refused;
  w.manager->start_process(sb, core::ProcessSpec{{"true"}, std::nullopt, {}, std::nullopt}, [&](Result<std::string> r) { refused = r; });
  w.run_until([&] { return refused.has_value(); });
  REQUIRE_FALSE(refused->ok());
  CHECK_THAT(refused->error().message, Catch::Contains(sb));
}

TEST_CASE("a process past its output limit is killed and says why", "[sandbox][limits]") {
  World& w = world();
  core::CreateRequest request;
  request.resources.max_output_bytes = 4096;
  std::string sb = w.create(request);
  std::string p = w.start(sb, {"sh", "-c", "while :; do echo 0123456789abcdef0123456789abcdef; done"});
  auto exit = w.wait_exit(p);
  CHECK(exit.reason == core::ProcessEndReason::kOutputLimit);
  CHECK(exit.signal == SIGKILL);
  CHECK(w.events.output[p].size() == 4096);
  w.destroy(sb);
}

TEST_CASE("a sandbox past its lifetime is ended with reason lifetimeLimit", "[sandbox][limits]") {
  World& w = world();
  core::CreateRequest request;
  request.resources.lifetime_seconds = 2;
  std::string sb = w.create(request);
  std::string p = w.start(sb, {"sleep", "600"});
  w.run_until([&] { return w.events.reached(sb, core::SandboxState::kGone); }, 60s);
  bool by_lifetime = false;
  for (const auto& [id, s, r] : w.events.states)
    if (id == sb && s == core::SandboxState::kGone) by_lifetime = r == core::StopReason::kLifetimeLimit;
  CHECK(by_lifetime);
  CHECK(w.events.exits[p].reason == core::ProcessEndReason::kSandboxGone);
}

TEST_CASE("QEMU killed from outside: the sandbox fails with guestCrashed and its processes exit", "[sandbox][faults]") {
  World& w = world();
  std::string sb = w.create();
  std::string p = w.start(sb, {"sleep", "600"});
  // Find this sandbox's QEMU through its state dir and kill it as an outsider would.
  std::optional<int> qemu;
  for (const auto& entry : std::filesystem::directory_iterator(w.state.dir / "vms")) {
    std::ifstream pid_file(entry.path() / "qemu.pid");
    int pid = 0;
    if (pid_file >> pid) qemu = pid;
  }
  if (!qemu) {
    // Fall back to the process list: the only QEMU whose command line names our state dir.
    for (const auto& proc : std::filesystem::directory_iterator("/proc")) {
      std::ifstream cmdline(proc.path() / "cmdline");
      std::string text((std::istreambuf_iterator<char>(cmdline)), {});
      if (text.find("qemu-system") != std::string::npos && text.find(w.state.dir.string() + "/vms") != std::string::npos &&
          text.find("template") == std::string::npos)
        qemu = std::stoi(proc.path().filename().string());
    }
  }
  REQUIRE(qemu);
  ::kill(*qemu, SIGKILL);
  w.run_until([&] { return w.events.reached(sb, core::SandboxState::kFailed); }, 60s);
  for (const auto& [id, s, r] : w.events.states)
    if (id == sb && s == core::SandboxState::kFailed) CHECK(r == core::StopReason::kGuestCrashed);
  REQUIRE(w.events.exits.count(p));
  CHECK(w.events.exits[p].reason == core::ProcessEndReason::kSandboxGone);
}

TEST_CASE("a start raced by a destroy is answered: an error and no exit, or its id and one exit", "[sandbox][faults]") {
  World& w = world();
  for (int round = 0; round < 3; ++round) {
    std::string sb = w.create();
    std::optional<Result<std::string>> started;
    bool destroyed = false;
    std::size_t exits_before = w.events.exits.size();
    w.manager->start_process(sb, core::ProcessSpec{{"sleep", "600"}, std::nullopt, {}, std::nullopt},
                             [&](Result<std::string> r) { started = std::move(r); });
    w.manager->destroy(sb, [&](Result<void>) { destroyed = true; });
    w.run_until([&] { return started.has_value() && destroyed; }, 60s);
    if (started->ok()) {
      CHECK(w.events.exits.count(**started) == 1);  // its id, then its one exit
    } else {
      INFO(started->error().message);
      CHECK(started->error().code == ErrorCode::kWrongState);
      CHECK(w.events.exits.size() == exits_before);  // no exit for an id the editor never got
    }
  }
}

TEST_CASE("shutdown ends every sandbox and leaves no handles", "[sandbox]") {
  World& w = world();
  std::string sb = w.create();
  bool done = false;
  w.manager->shutdown([&] { done = true; });
  w.run_until([&] { return done; });
  CHECK(w.events.reached(sb, core::SandboxState::kGone));
  w.manager.reset();
  uv_run(&w.loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&w.loop) == 0);
}

