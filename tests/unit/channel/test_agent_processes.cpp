// Processes end to end: the real lockroom-agent on the host, driven through GuestChannel and
// AgentClient over a socketpair.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "tests/unit/channel/channel_harness.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;

namespace {
// The agent's resident high-water mark after streaming: a few MiB normally; AddressSanitizer's
// shadow memory and quarantine inflate it in the asan build.
#if defined(__SANITIZE_ADDRESS__)
constexpr long kAgentRssBoundKib = 96 * 1024;
#else
constexpr long kAgentRssBoundKib = 16 * 1024;
#endif
}  // namespace

TEST_CASE("agent: echo hi gives its output and exit code 0", "[channel][e2e]") {
  AgentHarness h;
  REQUIRE(h.hello);
  CHECK(h.hello->protocol == 1);
  CHECK(h.hello->process_limit == "rlimit");
  auto run = run_process(h, argv({"echo", "hi"}));
  REQUIRE(run->exit);
  CHECK(run->out == "hi\n");
  CHECK(run->err.empty());
  CHECK(run->exit->exit_code == 0);
  CHECK_FALSE(h.failure);
  CHECK(h.client->tracked_processes() == 0);
  REQUIRE(h.loop.run_until([&] { return h.channel->session().stream_count() == 0; }, 5s));  // nothing left open
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: exit codes, stderr and signals", "[channel][e2e]") {
  AgentHarness h;
  auto failed = run_process(h, argv({"sh", "-c", "echo oops >&2; exit 7"}));
  REQUIRE(failed->exit);
  CHECK(failed->exit->exit_code == 7);
  CHECK(failed->err == "oops\n");

  auto killed = run_process(h, argv({"sh", "-c", "kill -TERM $$"}));
  REQUIRE(killed->exit);
  CHECK_FALSE(killed->exit->exit_code);
  CHECK(killed->exit->signal == SIGTERM);

  auto sleeper = start_process(h, argv({"sleep", "30"}));
  REQUIRE(h.loop.run_until([&] { return sleeper->started; }));
  std::optional<Result<void>> signalled;
  h.client->signal(sleeper->pid, SIGKILL, [&](Result<void> r) { signalled = r; });
  REQUIRE(h.loop.run_until([&] { return sleeper->done(false); }));
  REQUIRE(signalled);
  CHECK(signalled->ok());
  CHECK(sleeper->exit->signal == SIGKILL);

  std::optional<Result<void>> late;
  h.client->signal(sleeper->pid, SIGTERM, [&](Result<void> r) { late = r; });
  REQUIRE(h.loop.run_until([&] { return late.has_value(); }));
  REQUIRE_FALSE(late->ok());
  CHECK((late->error().code == ErrorCode::kNotFound || late->error().code == ErrorCode::kWrongState));
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: stdin is written and closed through its stream", "[channel][e2e]") {
  AgentHarness h;
  auto run = start_process(h, argv({"cat"}));
  REQUIRE(h.loop.run_until([&] { return run->started; }));
  REQUIRE(h.client->write_stdin(run->pid, "hello "));
  REQUIRE(h.client->write_stdin(run->pid, "world\n"));
  REQUIRE(h.loop.run_until([&] { return run->out == "hello world\n"; }));
  CHECK_FALSE(run->exit);
  REQUIRE(h.client->close_stdin(run->pid));
  REQUIRE(h.loop.run_until([&] { return run->done(false); }));
  CHECK(run->exit->exit_code == 0);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: a pty is a real terminal and resizes", "[channel][e2e]") {
  AgentHarness h;
  auto params = argv({"tty"});
  params.pty = wire::TerminalSize{80, 24};
  auto tty = run_process(h, params);
  REQUIRE(tty->exit);
  CHECK(tty->exit->exit_code == 0);
  CHECK_THAT(tty->pty, Catch::StartsWith("/dev/pts/"));

  params = argv({"sh", "-c", "stty size; read line; stty size; echo TERM=$TERM"});
  params.pty = wire::TerminalSize{80, 24};
  auto sized = start_process(h, params);
  REQUIRE(h.loop.run_until([&] { return sized->pty.find("24 80") != std::string::npos; }));
  std::optional<Result<void>> resized;
  h.client->resize(sized->pid, wire::TerminalSize{100, 30}, [&](Result<void> r) { resized = r; });
  REQUIRE(h.loop.run_until([&] { return resized.has_value(); }));
  REQUIRE(resized->ok());
  REQUIRE(h.client->write_stdin(sized->pid, "\n"));
  REQUIRE(h.loop.run_until([&] { return sized->done(true); }));
  CHECK_THAT(sized->pty, Catch::Contains("30 100"));
  CHECK_THAT(sized->pty, Catch::Contains("TERM=xterm-256color"));
  CHECK(sized->exit->exit_code == 0);
  REQUIRE(h.loop.run_until([&] { return h.channel->session().stream_count() == 0; }, 5s));  // the pty stream is closed both ways

  auto plain = start_process(h, argv({"sleep", "5"}));
  REQUIRE(h.loop.run_until([&] { return plain->started; }));
  std::optional<Result<void>> refused;
  h.client->resize(plain->pid, wire::TerminalSize{10, 10}, [&](Result<void> r) { refused = r; });
  REQUIRE(h.loop.run_until([&] { return refused.has_value(); }));
  REQUIRE_FALSE(refused->ok());
  CHECK_THAT(refused->error().message, Catch::Contains("has no terminal"));
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: env and cwd", "[channel][e2e]") {
  AgentHarness h;
  auto params = argv({"sh", "-c", "echo $GREETING; echo ${HOME-unset}; pwd"});
  params.env = {{"GREETING", "hej"}, {"HOME", std::nullopt}};
  params.cwd = "/tmp";
  auto run = run_process(h, params);
  REQUIRE(run->exit);
  CHECK(run->out == "hej\nunset\n/tmp\n");
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: a process that cannot start says why", "[channel][e2e]") {
  AgentHarness h;
  auto missing = run_process(h, argv({"no-such-program-here"}));
  REQUIRE(missing->start_error);
  CHECK(missing->start_error->code == ErrorCode::kInvalidInput);
  CHECK_THAT(missing->start_error->message, Catch::Contains("cannot start \"no-such-program-here\": not found as an executable in PATH"));

  auto params = argv({"true"});
  params.cwd = "/no/such/dir";
  auto bad_cwd = run_process(h, params);
  REQUIRE(bad_cwd->start_error);
  CHECK_THAT(bad_cwd->start_error->message, Catch::Contains("cannot change to the directory \"/no/such/dir\": No such file or directory"));
  CHECK_FALSE(h.failure);

  auto after = run_process(h, argv({"echo", "still fine"}));
  CHECK(after->out == "still fine\n");
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: many processes at once", "[channel][e2e]") {
  AgentHarness h;
  std::vector<std::shared_ptr<ProcessRun>> runs;
  for (int i = 0; i < 20; ++i) runs.push_back(start_process(h, argv({"sh", "-c", "echo " + std::to_string(i)})));
  REQUIRE(h.loop.run_until([&] {
    for (auto& r : runs)
      if (!r->done(false)) return false;
    return true;
  }));
  for (int i = 0; i < 20; ++i) CHECK(runs[i]->out == std::to_string(i) + "\n");
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: 10 MB of output flows with credit, and throughput is measured", "[channel][e2e][throughput]") {
  AgentHarness h;
  std::size_t bytes = 0;
  bool exited = false;
  int ended = 0;
  channel::ProcessEvents events;
  events.on_output = [&](channel::OutputKind, std::string_view b) { bytes += b.size(); };
  events.on_output_end = [&](channel::OutputKind) { ended++; };
  events.on_exit = [&](const wire::ProcessExited& e) { exited = e.exit_code == 0; };
  auto start = std::chrono::steady_clock::now();
  h.client->start_process(argv({"head", "-c", "10485760", "/dev/zero"}), events, [](Result<wire::ProcessStartResult> r) { REQUIRE(r); });
  REQUIRE(h.loop.run_until([&] { return exited && ended == 2; }, 60s));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(bytes == 10485760u);
  std::printf("channel throughput: 10 MiB of process output in %.3f s = %.1f MB/s (socketpair, real agent)\n", seconds,
              10.485760 / seconds);
  CHECK(h.channel->stats().max_held == 0);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: a slow reader keeps memory bounded on both sides", "[channel][e2e]") {
  AgentHarness h;
  const std::size_t total = 4u << 20;
  std::size_t bytes = 0;
  bool exited = false;
  std::int64_t pid = 0;
  channel::ProcessEvents events;
  events.on_output = [&](channel::OutputKind, std::string_view b) {
    bytes += b.size();
    h.client->pause_output(pid, true);  // a reader that takes its time with every chunk
  };
  events.on_exit = [&](const wire::ProcessExited&) { exited = true; };
  h.client->start_process(argv({"head", "-c", std::to_string(total), "/dev/zero"}), events,
                          [&](Result<wire::ProcessStartResult> r) { pid = r ? r->pid : -1; });
  REQUIRE(h.loop.run_until([&] { return pid != 0; }));
  REQUIRE(pid > 0);
  // While paused, the process stalls on a full pipe: it cannot finish however long we wait.
  h.loop.run_until([] { return false; }, 300ms);
  CHECK(bytes < total);
  CHECK_FALSE(exited);
  std::size_t window = h.hello->settings.stream_window;
  CHECK(h.channel->stats().max_held <= window);
  while (!exited) {
    h.client->pause_output(pid, false);
    REQUIRE(h.loop.run_until([&] { return exited || h.channel->stats().max_held > 0; }, 10s));
    h.loop.run_until([] { return false; }, 2ms);
  }
  REQUIRE(h.loop.run_until([&] {
    h.client->pause_output(pid, false);
    return bytes == total;
  }));
  CHECK(h.channel->stats().max_held <= window);
  long rss = h.agent->peak_rss_kib();
  INFO("agent peak RSS " << rss << " KiB");
  CHECK(rss > 0);
  CHECK(rss < kAgentRssBoundKib);  // 4 MiB went through; a buffering agent would hold all of it
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent: a per-process limit bounds forks (RLIMIT_NPROC, as a user with no other processes)", "[channel][e2e][limits]") {
  if (!std::filesystem::exists("/usr/bin/setpriv")) {
    WARN("skipped: setpriv (util-linux) is needed to run the test command as an unprivileged user");
    return;
  }
  // RLIMIT_NPROC counts every process of the user, and root is exempt: run as a uid of our own.
  std::string uid = std::to_string(200000 + ::getpid() % 100000);
  auto forks = [&](std::int64_t limit) {
    auto params = argv({"setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups", "sh", "-c",
                        "for i in 1 2 3 4 5 6; do sleep 0.2 & done; wait; echo done"});
    params.max_processes = limit;
    return params;
  };
  AgentHarness h;
  auto limited = run_process(h, forks(3), 30s);
  REQUIRE(limited->exit);
  INFO("stderr: " << limited->err);
  CHECK_THAT(limited->err, Catch::Contains("fork"));
  CHECK(limited->exit->exit_code != 0);
  auto roomy = run_process(h, forks(20), 30s);
  REQUIRE(roomy->exit);
  CHECK(roomy->out == "done\n");
  CHECK(roomy->exit->exit_code == 0);
  CHECK(h.shutdown() == 0);
}
