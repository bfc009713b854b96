// health, guest.resume, limits.set and the agent's lifetime, against the real agent.
#include <catch2/catch.hpp>

#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fstream>
#include <thread>

#include "tests/unit/channel/channel_harness.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;

extern char** environ;

TEST_CASE("agent: health reports uptime, load and memory", "[channel][e2e]") {
  AgentHarness h;
  std::optional<Result<wire::HealthResult>> health;
  h.client->health([&](Result<wire::HealthResult> r) { health.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return health.has_value(); }));
  REQUIRE(*health);
  CHECK((*health)->uptime_ms > 0);
  CHECK((*health)->memory_total_kib > 0);
  CHECK((*health)->memory_available_kib > 0);
  CHECK((*health)->processes == 0);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: guest.resume mixes in entropy and reseeds the CRNG", "[channel][e2e][resume]") {
  AgentHarness h;
  wire::ResumeParams params;
  params.unix_time_ns = 1764488000000000000LL;
  for (int i = 0; i < 64; ++i) params.entropy.push_back(static_cast<char>(i * 37 + 11));
  std::optional<Result<wire::ResumeResult>> resumed;
  h.client->resume(params, [&](Result<wire::ResumeResult> r) { resumed.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return resumed.has_value(); }));
  if (!*resumed && resumed->error().message.find("RNDADDENTROPY was refused") != std::string::npos) {
    WARN("skipped: this host does not let the agent add entropy (" << resumed->error().message << "); run as root with CAP_SYS_ADMIN");
    CHECK(resumed->error().code == ErrorCode::kInvalidInput);  // permission denied maps to invalid input
  } else {
    REQUIRE(*resumed);
    CHECK((*resumed)->entropy_bytes == 64);
    CHECK((*resumed)->reseeded);
    CHECK_FALSE((*resumed)->clock_set);  // --no-clock: tests never move the host's clock
  }
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: limits.set reports how the limit is enforced", "[channel][e2e][limits]") {
  AgentHarness h;
  std::optional<Result<wire::LimitsResult>> set;
  h.client->set_limits(wire::LimitsParams{500}, [&](Result<wire::LimitsResult> r) { set.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return set.has_value(); }));
  REQUIRE(*set);
  CHECK((*set)->max_processes == 500);
  CHECK((*set)->enforcement == "rlimit");
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: closing the channel ends the agent and what it started", "[channel][e2e]") {
  AgentHarness h;
  auto run = start_process(h, argv({"sleep", "60"}));
  REQUIRE(h.loop.run_until([&] { return run->started; }));
  pid_t sleeper = static_cast<pid_t>(run->pid);
  CHECK(h.shutdown() == 0);
  // The sleeper was killed with its process group (it may linger as a zombie until reaped).
  auto gone = [sleeper] {
    std::ifstream stat("/proc/" + std::to_string(sleeper) + "/stat");
    std::string pid, comm, state;
    return !(stat >> pid >> comm >> state) || state == "Z";
  };
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!gone() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  CHECK(gone());
}

TEST_CASE("agent: --connect serves a unix socket the host listens on", "[channel][e2e]") {
  std::string dir = (std::filesystem::temp_directory_path() / ("lockroom-connect-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  std::string path = dir + "/agent.sock";
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 1) == 0);

  std::vector<std::string> args = {LOCKROOM_AGENT_PATH, "--connect", path, "--no-clock", "--log-level", "warning"};
  std::vector<char*> argv_;
  for (auto& a : args) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  pid_t pid = -1;
  REQUIRE(::posix_spawn(&pid, LOCKROOM_AGENT_PATH, nullptr, nullptr, argv_.data(), environ) == 0);
  int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(listener);
  REQUIRE(fd >= 0);

  Loop loop;
  std::optional<Result<wire::HelloResult>> hello;
  auto channel = std::make_unique<channel::GuestChannel>(loop.get());
  REQUIRE(channel->start(fd, [&](Result<wire::HelloResult> r) { hello.emplace(std::move(r)); }, [](const Error&) {}));
  REQUIRE(loop.run_until([&] { return hello.has_value(); }));
  REQUIRE(*hello);
  CHECK((*hello)->pid == pid);
  bool closed = false;
  channel->close([&] { closed = true; });
  REQUIRE(loop.run_until([&] { return closed; }));
  channel.reset();
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // the host went away: the agent is done
  std::filesystem::remove_all(dir);
  CHECK(loop.finish() == 0);
}
