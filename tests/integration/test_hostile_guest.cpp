// A guest that attacks its channel (protocol/sandboxes.md, "User"; docs/reliability.md): the
// static program tests/integration/guest_attacker.cpp is copied into real guests and, run as
// root, takes the agent's end of the virtio-serial port with pidfd_getfd(2) and writes garbage,
// lies and floods on it; run as the default user it must not get the port at all. Throughout, a
// bystander sandbox keeps running commands, the attacked sandbox's host workspace stays byte for
// byte as it was, lockroom's memory stays bounded and every process gets exactly one exit (the
// Recorder fails a test on a second one).
#include <sys/resource.h>

#include <fstream>
#include <iterator>

#include "server/egress/policy/policy_json.h"
#include "tests/integration/editor_session.h"
#include "tests/integration/sandbox_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using namespace std::chrono_literals;

namespace {

std::string attacker_bytes() {
  std::ifstream in(LOCKROOM_GUEST_ATTACKER, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(bytes.size() > 1000);
  return bytes;
}

// Copies the attacker to /tmp/guest-attacker in the sandbox (as its default user).
void install_attacker(World& w, const std::string& sb) {
  static const std::string bytes = attacker_bytes();
  std::string pid = w.start(sb, {"sh", "-c", "cat > /tmp/guest-attacker && chmod 755 /tmp/guest-attacker"});
  REQUIRE(w.manager->write_stdin(pid, bytes).ok());
  REQUIRE(w.manager->close_stdin(pid).ok());
  REQUIRE(w.wait_exit(pid).exit_code == 0);
}

// Starts the attacker with `args`, as root unless `root` is false.
std::string attack(World& w, const std::string& sb, std::vector<std::string> args, bool root = true) {
  args.insert(args.begin(), "/tmp/guest-attacker");
  core::ProcessSpec spec{std::move(args), std::nullopt, {}, std::nullopt};
  spec.root = root;
  std::optional<Result<std::string>> started;
  w.manager->start_process(sb, spec, [&](Result<std::string> r) { started = std::move(r); });
  w.run_until([&] { return started.has_value(); });
  REQUIRE(started->ok());
  return **started;
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

std::optional<core::StopReason> failed_reason(World& w, const std::string& sb) {
  for (const auto& [id, s, r] : w.events.states)
    if (id == sb && s == core::SandboxState::kFailed) return r;
  return std::nullopt;
}

// The bystander: one sandbox for the whole file, asked to run a command after each attack.
std::string& bystander() {
  static std::string id;
  World& w = world();
  if (id.empty()) id = w.create();
  return id;
}

void bystander_still_serves(World& w) {
  CHECK(w.sh(bystander(), "echo still here") == "still here\n");
}

// An attacked sandbox on a real workspace; the host folder is compared after the attack.
struct Attacked {
  World& w;
  HostRepo repo;
  std::string fingerprint = repo.worktree_fingerprint();
  std::string id;
  explicit Attacked(World& world) : w(world) {
    core::CreateRequest request;
    request.workspace = core::WorkspaceRequest{repo.dir.path().string(), {}, {}};
    id = w.create(request);
    install_attacker(w, id);
    // The agent's work the attack must not turn into host changes.
    w.sh(id, "cd /workspace && echo agent edit >> notes.txt && rm gone.txt");
  }
  ~Attacked() {
    CHECK(repo.worktree_fingerprint() == fingerprint);
    if (!failed_reason(w, id) && !w.events.reached(id, core::SandboxState::kGone)) w.destroy(id);
  }
};

}  // namespace

TEST_CASE("hostile guest: the default user cannot take the channel, root can", "[hostile]") {
  World& w = world();
  Attacked a(w);
  std::string as_user = attack(w, a.id, {"take"}, false);
  auto user_exit = w.wait_exit(as_user);
  INFO(w.events.output[as_user]);
  CHECK(user_exit.exit_code == 3);
  CHECK(w.events.output[as_user].find("refused") != std::string::npos);
  // What else the default user cannot undo: the disk limit, the cgroup limits, root's home.
  std::string probe = w.sh(a.id, "id -u; id -g; echo $HOME; mount -o remount,size=2g / && echo remounted; "
                                 "echo 1 > /sys/fs/cgroup/cgroup.procs && echo moved; ls /root && echo listed; touch /workspace/mine && stat -c 'owner %u %g' /workspace/mine");
  INFO(probe);
  CHECK(probe.rfind("1000\n1000\n/home/agent\n", 0) == 0);
  CHECK(probe.find("remounted") == std::string::npos);
  CHECK(probe.find("moved") == std::string::npos);
  CHECK(probe.find("listed") == std::string::npos);
  CHECK(probe.find("owner 1000 1000") != std::string::npos);  // the workspace is the user's

  // The same program as root does take it (so the refusal above is the user's, not a broken test);
  // it only looks, so the sandbox carries on.
  std::string as_root = attack(w, a.id, {"take"});
  auto root_exit = w.wait_exit(as_root);
  INFO(w.events.output[as_root]);
  CHECK(root_exit.exit_code == 0);
  CHECK(w.sh(a.id, "echo fine") == "fine\n");
  bystander_still_serves(w);
}

TEST_CASE("hostile guest: random bytes on the channel stop that sandbox with channelError", "[hostile]") {
  World& w = world();
  Attacked a(w);
  std::string p = w.start(a.id, {"sleep", "600"});
  attack(w, a.id, {"random", "65536"});
  w.run_until([&] { return failed_reason(w, a.id).has_value(); }, 60s);
  CHECK(failed_reason(w, a.id) == core::StopReason::kChannelError);
  w.run_until([&] { return w.events.exits.count(p) != 0; }, 30s);
  CHECK(w.events.exits[p].reason == core::ProcessEndReason::kSandboxGone);
  bystander_still_serves(w);
}

TEST_CASE("hostile guest: a frame announcing 4 GiB stops that sandbox without lockroom buffering it", "[hostile]") {
  World& w = world();
  long before = peak_rss_kib();
  Attacked a(w);
  attack(w, a.id, {"huge"});
  w.run_until([&] { return failed_reason(w, a.id).has_value(); }, 60s);
  CHECK(failed_reason(w, a.id) == core::StopReason::kChannelError);
  CHECK(peak_rss_kib() - before < 64 * 1024);
  bystander_still_serves(w);
}

TEST_CASE("hostile guest: process.exited lies (a pid never started, a running process twice) give no false exits", "[hostile]") {
  World& w = world();
  SECTION("a pid the host never started") {
    Attacked a(w);
    attack(w, a.id, {"lie-exit", "424242"});
    w.run_until([&] { return failed_reason(w, a.id).has_value(); }, 60s);
    CHECK(failed_reason(w, a.id) == core::StopReason::kChannelError);
  }
  SECTION("the guest pid of a process that still runs") {
    Attacked a(w);
    std::string sleeper = w.start(a.id, {"sh", "-c", "echo $$; exec sleep 600"});
    w.run_until([&] { return w.events.output[sleeper].find('\n') != std::string::npos; });
    std::string guest_pid = w.events.output[sleeper].substr(0, w.events.output[sleeper].find('\n'));
    attack(w, a.id, {"lie-exit", guest_pid});
    // Either the lie is taken for the exit (the sleeper exits once, as the Recorder requires) and
    // the duplicate stops the sandbox, or the sandbox stops at once: never two exits, never a
    // process still "running" that lockroom was told ended.
    w.run_until([&] { return failed_reason(w, a.id).has_value(); }, 60s);
    CHECK(failed_reason(w, a.id) == core::StopReason::kChannelError);
    w.run_until([&] { return w.events.exits.count(sleeper) != 0; }, 30s);
  }
  bystander_still_serves(w);
}

TEST_CASE("hostile guest: a million notifications leave lockroom up and its memory bounded", "[hostile]") {
  World& w = world();
  long before = peak_rss_kib();
  Attacked a(w);
  std::string p = attack(w, a.id, {"flood", "1000000"});
  // The flood ends with the attacker, or the sandbox is stopped for it: both are fine; what
  // matters is that lockroom stays up, bounded, and serves the others meanwhile.
  w.run_until([&] { return w.events.exits.count(p) != 0 || failed_reason(w, a.id).has_value(); }, 600s);
  if (!failed_reason(w, a.id)) {
    INFO(w.events.output[p]);
    CHECK(w.events.exits[p].exit_code == 0);  // every one of them went out
    CHECK(w.events.output[p].find("sent 1000000") != std::string::npos);
  }
  WARN("flood: " << w.events.output[p] << (failed_reason(w, a.id) ? " (the sandbox was stopped)" : " (the sandbox lives on)"));
  bystander_still_serves(w);
  long grew = peak_rss_kib() - before;
  WARN("peak RSS grew by " << grew / 1024 << " MiB during the flood");
  CHECK(grew < 128 * 1024);
  if (!failed_reason(w, a.id)) CHECK(w.sh(a.id, "echo after") == "after\n");
}

TEST_CASE("hostile guest: thousands of connections to the in-guest proxy at once", "[hostile]") {
  World& w = world();
  core::CreateRequest request;
  auto policy = egress::parse_policy(protocol::json{{"rules", protocol::json::array()}, {"defaultAllow", false}});
  REQUIRE(policy.ok());
  request.network = core::NetworkRequest{};
  request.network->policy = *policy;
  std::string sb = w.create(request);
  install_attacker(w, sb);
  auto count_fds = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  std::size_t fds_before = count_fds();
  std::string p = w.start(sb, {"sh", "-c", "exec /tmp/guest-attacker connect 3000 \"${HTTP_PROXY##*:}\""});
  w.run_until([&] { return w.events.exits.count(p) != 0; }, 300s);
  INFO(w.events.output[p]);
  CHECK(w.events.output[p].find("opened ") != std::string::npos);
  bystander_still_serves(w);
  CHECK(w.sh(sb, "echo after") == "after\n");
  w.run_until([&] { return count_fds() <= fds_before + 8; }, 60s);  // every relay was let go
  w.destroy(sb);
}
