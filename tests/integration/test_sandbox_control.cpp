// `lockroom diff` and `lockroom apply` against a sandbox another process owns, with a real guest:
// the world's manager owns a sandbox with a workspace and serves its control socket, as `serve`
// and `lockroom run` do; the commands' code runs on another thread as the CLI would (blocking,
// through the socket named in sandbox.json). The guest edits files; the diff shows them while
// the host stays byte-for-byte the same; apply writes them, reports a conflict with the user's
// own edit and leaves that file alone; discard drops a change in the guest, or all of them (and
// says how many); a branch save leaves the checkout, HEAD and the index alone. A sandbox without a
// workspace, and one that has ended, give clear errors.
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "server/api/control_endpoints.h"
#include "server/api/control_review.h"
#include "server/vm/orphans.h"
#include "tests/integration/sandbox_world.h"
#include "tests/support/shell.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace fs = std::filesystem;

namespace {


void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// Events of the endpoints when they are not the manager's own (the world's manager reports to
// its recorder): nothing to pass on.
struct NoEvents final : core::SandboxEvents {
  void state_changed(const std::string&, core::SandboxState, core::StopReason, const std::string&) override {}
  void process_output(const std::string&, core::OutputStream, const core::OutputChunk&) override {}
  void process_exited(const std::string&, const core::ProcessExit&) override {}
};

api::DiffRequest diff_request(std::vector<std::string> paths, bool stat, bool color = false) {
  api::DiffRequest r;
  r.paths = std::move(paths);
  r.stat = stat;
  r.color = color;
  return r;
}

api::ApplyRequest apply_request(std::vector<std::string> paths, std::optional<std::string> branch = std::nullopt) {
  api::ApplyRequest r;
  r.paths = std::move(paths);
  r.branch = std::move(branch);
  return r;
}

api::ApplyRequest discard_request(std::vector<std::string> paths) {
  api::ApplyRequest r = apply_request(std::move(paths));
  r.discard = true;
  return r;
}

// What a CLI command printed and returned.
struct Printed {
  int status = -1;
  std::string out, err;
};

// A small git repository on the host.
struct HostRepo {
  fs::path dir;
  HostRepo() {
    // mkdtemp fills in the XXXXXX; $TMPDIR is honoured.
    std::string tmpl = (fs::temp_directory_path() / "lockroom-control-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    write_file(dir / "README.md", "# demo\nline 2\nline 3\n");
    write_file(dir / "notes.txt", "keep me\n");
    sh("cd " + dir.string() + " && git init -q -b main && git -c user.name=t -c user.email=t@t add -A && "
       "git -c user.name=t -c user.email=t@t commit -q -m initial");
  }
  ~HostRepo() { fs::remove_all(dir); }
  // Every file's name, mode, size and content hash; with `with_git` false, .git is left out.
  std::string fingerprint(bool with_git = true) const {
    std::string files = with_git ? "find . -type f" : "find . -path ./.git -prune -o -type f -print";
    return sh("cd " + dir.string() + " && " + files +
              " | LC_ALL=C sort | while read f; do stat -c '%n %a %s' \"$f\"; sha1sum < \"$f\"; done");
  }
  // What a branch save must not move: HEAD, the branch it names, and the index.
  std::string checkout_state() const {
    return sh("cd " + dir.string() + " && git symbolic-ref HEAD && git rev-parse HEAD && sha1sum < .git/index");
  }
};

// A sandbox of the world, served on its control socket like the CLI's owners serve theirs.
struct ControlledSandbox {
  World& w = world();
  NoEvents no_events;
  api::ControlEndpoints endpoints{&w.loop, w.state.dir, no_events};
  std::string id;
  explicit ControlledSandbox(std::optional<std::string> workspace) {
    endpoints.attach(*w.manager);
    core::CreateRequest request;
    if (workspace) request.workspace = core::WorkspaceRequest{*workspace, {}, {}};
    id = w.create(request);
    auto opened = endpoints.open(id);
    INFO((opened.ok() ? std::string() : opened.error().message));
    REQUIRE(opened.ok());
  }
  ~ControlledSandbox() {
    if (!id.empty()) w.destroy(id);
  }
  void guest(const std::string& script) {
    std::string p = w.start(id, {"sh", "-c", "cd /workspace && " + script + " 2>&1"});
    auto exit = w.wait_exit(p);
    INFO(w.events.output[p]);
    REQUIRE(exit.exit_code == 0);
  }
  // Runs what the CLI runs for `lockroom diff|apply <prefix>` on a thread while the owner's loop
  // turns here.
  template <typename Command>
  Printed cli(Command command) {
    std::string prefix = id.substr(0, id.size() - 2);  // an unambiguous prefix, as a user would type it
    Printed printed;
    std::atomic<bool> done{false};
    fs::path state = w.state.dir;
    std::thread thread([&] {
      std::ostringstream out, err;
      auto record = api::find_control_target(state, prefix, vm::lockroom_is_running);
      auto client = record ? api::ControlClient::connect(*record) : Result<api::ControlClient>(record.error());
      if (client) {
        printed.status = command(*client, out, err);
      } else {
        err << "lockroom: " << client.error().message << "\n";
        printed.status = 1;
      }
      printed.out = out.str();
      printed.err = err.str();
      done = true;
    });
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (!done && std::chrono::steady_clock::now() < deadline) {
      uv_run(&w.loop, UV_RUN_NOWAIT);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    thread.join();  // the client's own deadline ends it if the loop stopped answering
    return printed;
  }
  Printed diff(api::DiffRequest request = {}) {
    return cli([&](api::ControlClient& c, std::ostream& out, std::ostream& err) { return api::run_diff(c, request, out, err); });
  }
  Printed apply(api::ApplyRequest request = {}) {
    return cli([&](api::ControlClient& c, std::ostream& out, std::ostream& err) { return api::run_apply(c, request, out, err); });
  }
};

}  // namespace

TEST_CASE("lockroom diff shows a live sandbox's edits and apply writes them, conflicts reported per file", "[sandbox][control]") {
  HostRepo repo;
  ControlledSandbox s(repo.dir.string());
  s.guest("sed -i 's/line 2/line 2 from the agent/' README.md && echo 'agent line' >> notes.txt && echo hello > added.txt");
  std::string before = repo.fingerprint();

  auto diff = s.diff();
  INFO(diff.err);
  REQUIRE(diff.status == 0);
  CHECK(diff.out.find("diff --git a/README.md b/README.md") != std::string::npos);
  CHECK(diff.out.find("-line 2\n+line 2 from the agent\n") != std::string::npos);
  CHECK(diff.out.find("+agent line\n") != std::string::npos);
  CHECK(diff.out.find("+++ b/added.txt") != std::string::npos);
  CHECK(diff.out.find("\x1b[") == std::string::npos);  // no colour unless asked

  auto colored = s.diff(diff_request({"added.txt"}, false, true));
  CHECK(colored.out.find("\x1b[32m+hello\x1b[m") != std::string::npos);
  CHECK(colored.out.find("README.md") == std::string::npos);  // only the path asked for

  auto stat = s.diff(diff_request({}, true));
  REQUIRE(stat.status == 0);
  CHECK(stat.out.find(" README.md | 2 +-\n") != std::string::npos);
  CHECK(stat.out.find(" 3 files changed, 3 insertions(+), 1 deletion(-)\n") != std::string::npos);
  CHECK(repo.fingerprint() == before);  // looking changed nothing on the host

  // Meanwhile the user edits notes.txt where the agent did: that file conflicts.
  write_file(repo.dir / "notes.txt", "keep me\nuser line\n");
  auto applied = s.apply();
  INFO(applied.out << applied.err);
  CHECK(applied.status == 1);
  CHECK(applied.out.find("applied   README.md\n") != std::string::npos);
  CHECK(applied.out.find("applied   added.txt\n") != std::string::npos);
  CHECK(applied.out.find("conflict  notes.txt") != std::string::npos);
  CHECK(applied.out.find("wrote 2 files of 3 to the workspace; 1 conflict\n") != std::string::npos);
  CHECK(read_file(repo.dir / "README.md") == "# demo\nline 2 from the agent\nline 3\n");
  CHECK(read_file(repo.dir / "added.txt") == "hello\n");
  CHECK(read_file(repo.dir / "notes.txt") == "keep me\nuser line\n");  // the user's edit is kept

  // The conflicting change is dropped in the sandbox; the host is not touched.
  auto discarded = s.apply(discard_request({"notes.txt"}));
  INFO(discarded.err);
  CHECK(discarded.status == 0);
  CHECK(discarded.out.find("discarded 1 changed file in sandbox " + s.id) != std::string::npos);
  CHECK(read_file(repo.dir / "notes.txt") == "keep me\nuser line\n");
  // What was applied is the review's base now: nothing is left to decide ...
  auto after = s.diff(diff_request({}, true));
  CHECK(after.status == 0);
  CHECK(after.err.find("has no changes") != std::string::npos);
  // ... until the agent edits an applied file again: only that edit shows.
  s.guest("echo more >> added.txt");
  auto again = s.diff(diff_request({}, true));
  CHECK(again.out.find(" added.txt | 1 +\n") != std::string::npos);
  CHECK(again.out.find(" 1 file changed") != std::string::npos);

  auto nothing = s.apply(apply_request({"no/such/file"}));
  CHECK(nothing.status == 1);
  CHECK(nothing.err.find("no changes under 'no/such/file'") != std::string::npos);

  // Discarding everything says how many changes went, and then there are none.
  auto all = s.apply(discard_request({}));
  INFO(all.out << all.err);
  CHECK(all.status == 0);
  CHECK(all.out.find("discarded 1 changed file in sandbox " + s.id) != std::string::npos);
  auto none = s.diff();
  CHECK(none.status == 0);
  CHECK(none.err.find("has no changes") != std::string::npos);
}

TEST_CASE("apply --branch commits a live sandbox's changes without touching the checkout", "[sandbox][control]") {
  HostRepo repo;
  ControlledSandbox s(repo.dir.string());
  s.guest("echo 'from the agent' >> README.md");
  std::string before = repo.fingerprint(false), checkout = repo.checkout_state();
  auto saved = s.apply(apply_request({}, "review-me"));
  INFO(saved.out << saved.err);
  REQUIRE(saved.status == 0);
  CHECK(saved.out.find("saved 1 file as lockroom/review-me (commit ") != std::string::npos);
  CHECK(sh("cd " + repo.dir.string() + " && git show lockroom/review-me:README.md") == "# demo\nline 2\nline 3\nfrom the agent\n");
  CHECK(read_file(repo.dir / "README.md") == "# demo\nline 2\nline 3\n");
  // The checkout is as it was: every file outside .git, HEAD and the index.
  CHECK(repo.fingerprint(false) == before);
  CHECK(repo.checkout_state() == checkout);
}

TEST_CASE("diff names what is wrong: no workspace, an ended sandbox", "[sandbox][control]") {
  std::string ended;
  {
    ControlledSandbox bare(std::nullopt);
    auto diff = bare.diff();
    CHECK(diff.status == 1);
    CHECK(diff.err.find("has no workspace") != std::string::npos);
    ended = bare.id;
  }
  // Its record goes with its state dir; until then its socket no longer answers.
  auto record = api::find_control_target(world().state.dir, ended, vm::lockroom_is_running);
  std::string why = record.ok() ? (api::ControlClient::connect(*record).ok() ? "" : "unreachable") : record.error().message;
  CHECK((why == "unreachable" || why.find("no sandbox '" + ended + "'") != std::string::npos));
}
