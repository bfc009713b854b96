// Workspace in, diff out, with real guests: a host git repository is snapshotted into a sandbox,
// a real agent edits it with the guest's own tools, and the changes come back for review and are
// applied to the host only when asked — merging the user's concurrent edits, reporting conflicts,
// or committing to a branch without touching the checkout.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "server/workspace/git_util.h"
#include "tests/integration/sandbox_world.h"
#include "tests/support/shell.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace fs = std::filesystem;
namespace review = lockroom::workspace::review;

namespace {


void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A host repository: committed files, an uncommitted edit, an untracked file, an ignored one, a
// secret, an executable and a symlink.
struct HostRepo {
  fs::path dir;
  HostRepo() {
    // mkdtemp fills in the XXXXXX; $TMPDIR is honoured.
    std::string tmpl = (std::filesystem::temp_directory_path() / "lockroom-ws-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    write_file(dir / "README.md", "# demo\n\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n");
    write_file(dir / "src/app.c", "int main(void) {\n  return 0;\n}\n");
    write_file(dir / "tool.sh", "#!/bin/sh\necho tool\n");
    chmod((dir / "tool.sh").c_str(), 0755);
    write_file(dir / ".gitignore", "build/\n");
    write_file(dir / "notes.txt", "keep me\n");
    fs::create_symlink("src/app.c", dir / "link-to-app");
    sh("cd " + dir.string() + " && git init -q -b main && git -c user.name=t -c user.email=t@t add -A && "
       "git -c user.name=t -c user.email=t@t commit -q -m initial");
    write_file(dir / "notes.txt", "keep me\nuncommitted edit\n");
    write_file(dir / "untracked.txt", "new on the host\n");
    write_file(dir / "build/out.o", "ignored\n");
    write_file(dir / ".env", "API_KEY=do-not-copy\n");
    write_file(dir / ".git/info/exclude", "*.swp\n/scratch/\n");  // rules the snapshot does not carry as files
  }
  ~HostRepo() { fs::remove_all(dir); }
  // Every file under the directory (including .git), with content and mode: proves nothing changed.
  std::string fingerprint() const {
    return sh("cd " + dir.string() + " && find . -type f -o -type l | LC_ALL=C sort | while read f; do "
              "stat -c '%n %a %s' \"$f\"; if [ -L \"$f\" ]; then readlink \"$f\"; else sha1sum < \"$f\"; fi; done");
  }
};

struct WorkspaceSandbox {
  World& w = world();
  HostRepo repo;
  std::string id;
  core::CreateResult created;
  explicit WorkspaceSandbox(workspace::snapshot::SnapshotLimits limits = {}) {
    core::CreateRequest request;
    request.workspace = core::WorkspaceRequest{repo.dir.string(), {}, limits};
    std::optional<Result<core::CreateResult>> r;
    w.manager->create(request, nullptr, [&](Result<core::CreateResult> v) { r = std::move(v); });
    w.run_until([&] { return r.has_value(); });
    INFO((r->ok() ? std::string() : r->error().message));
    REQUIRE(r->ok());
    created = std::move(**r);
    id = created.sandbox_id;
  }
  ~WorkspaceSandbox() { w.destroy(id); }
  // Runs a shell command in the guest's /workspace; returns its output, requires exit 0.
  std::string guest(const std::string& script) {
    std::string p = w.start(id, {"sh", "-c", "cd /workspace && " + script + " 2>&1"});
    auto exit = w.wait_exit(p);
    INFO(w.events.output[p]);
    REQUIRE(exit.exit_code == 0);
    return w.events.output[p];
  }
  template <typename T, typename Start>
  T await(Start start) {
    std::optional<Result<T>> r;
    start([&](Result<T> v) { r = std::move(v); });
    w.run_until([&] { return r.has_value(); });
    INFO((r->ok() ? std::string() : r->error().message));
    REQUIRE(r->ok());
    return std::move(**r);
  }
  std::string last_view;  // the view the last refresh() made: what apply() names
  core::ChangeSet refresh() {
    auto ws = w.manager->workspace(id);
    REQUIRE(ws.ok());
    auto set = await<core::ChangeSet>([&](auto done) { ws->first->refresh(*ws->second, done); });
    last_view = set.view_id;
    return set;
  }
  std::vector<review::FileApplyResult> apply(review::Selection selection) {
    auto ws = w.manager->workspace(id);
    REQUIRE(ws.ok());
    return await<std::vector<review::FileApplyResult>>(
        [&](auto done) { ws->first->apply_worktree(*ws->second, last_view, selection, nullptr, done); });
  }
};

const review::FileChange* find_change(const core::ChangeSet& set, const std::string& path) {
  return set.changes->find(path);
}

}  // namespace

TEST_CASE("the workspace arrives in the guest as a clean git checkout, secrets and ignored files left out", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  REQUIRE(s.created.workspace);
  const auto& snap = s.created.workspace->snapshot;
  CHECK(snap.is_git_repo);
  CHECK(std::find(snap.withheld.begin(), snap.withheld.end(), ".env") != snap.withheld.end());
  CHECK(s.created.workspace->transfer.objects > 0);

  CHECK(s.guest("git status --porcelain") == "");
  CHECK(s.guest("git rev-parse HEAD") == snap.commit_id + "\n");
  CHECK(s.guest("cat notes.txt") == "keep me\nuncommitted edit\n");  // the worktree, not HEAD
  CHECK(s.guest("cat untracked.txt") == "new on the host\n");
  CHECK(s.guest("test ! -e .env && test ! -e build && echo absent") == "absent\n");
  CHECK(s.guest("test -x tool.sh && readlink link-to-app") == "src/app.c\n");
}

TEST_CASE("the guest's edits come back as changes, the host is untouched until apply", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  std::string before = s.repo.fingerprint();
  s.guest("printf 'int main(void) {\\n  return 42;\\n}\\n' > src/app.c && rm untracked.txt && git mv -f README.md README.txt && "
          "chmod -x tool.sh && mkdir -p 'new dir' && printf 'new file \\303\\251\\n' > \"new dir/$(printf 'caf\\303\\251') file.txt\" && "
          "head -c 3000 /dev/urandom > blob.bin && ln -s /etc escape && mkdir -p empty/dir");
  auto set = s.refresh();
  CHECK(set.refused.empty());
  const auto* app = find_change(set, "src/app.c");
  REQUIRE(app);
  CHECK(app->status == review::ChangeStatus::kModified);
  CHECK(app->added_lines == 1);
  CHECK(app->removed_lines == 1);
  const auto* gone = find_change(set, "untracked.txt");
  REQUIRE(gone);
  CHECK(gone->status == review::ChangeStatus::kDeleted);
  const auto* renamed = find_change(set, "README.txt");
  REQUIRE(renamed);
  CHECK(renamed->status == review::ChangeStatus::kRenamed);
  CHECK(renamed->old_path == "README.md");
  const auto* tool = find_change(set, "tool.sh");
  REQUIRE(tool);
  CHECK(tool->old_mode == 0100755);
  CHECK(tool->new_mode == 0100644);
  const auto* added = find_change(set, "new dir/caf\xc3\xa9 file.txt");
  REQUIRE(added);
  CHECK(added->status == review::ChangeStatus::kAdded);
  const auto* bin = find_change(set, "blob.bin");
  REQUIRE(bin);
  CHECK(bin->binary);
  CHECK(find_change(set, "empty/dir") == nullptr);  // empty directories are not changes, as in git
  CHECK(set.blobs_fetched >= 3);

  CHECK(s.repo.fingerprint() == before);  // reviewing changed nothing on the host

  // A second look fetches only what changed since, inline with the manifest.
  s.guest("echo more >> notes.txt");
  auto again = s.refresh();
  CHECK(again.blobs_fetched == 1);
  CHECK(again.blobs_inlined == 1);
  // ... from a partial manifest patched onto the first view: every earlier change is still there.
  CHECK(again.steps.partial);
  CHECK(again.steps.records == 1);
  CHECK(again.changes->list().size() == set.changes->list().size() + (find_change(set, "notes.txt") ? 0 : 1));
  for (const char* path : {"src/app.c", "untracked.txt", "README.txt", "tool.sh", "blob.bin"}) CHECK(find_change(again, path));

  // Apply only src/app.c and the new file: exactly those change on the host.
  auto results = s.apply(review::Selection::only({{"src/app.c", std::nullopt}, {"new dir/caf\xc3\xa9 file.txt", std::nullopt}}));
  for (const auto& r : results) CHECK(r.status == review::ApplyStatus::kApplied);
  CHECK(read_file(s.repo.dir / "src/app.c") == "int main(void) {\n  return 42;\n}\n");
  CHECK(read_file(s.repo.dir / "new dir/caf\xc3\xa9 file.txt") == "new file \xc3\xa9\n");
  CHECK(fs::exists(s.repo.dir / "untracked.txt"));   // not selected: still there
  CHECK(fs::exists(s.repo.dir / "README.md"));
  CHECK_FALSE(fs::exists(s.repo.dir / "escape"));    // nothing else was written
}

TEST_CASE("a refresh after the guest's edits takes the changed files from the manifest, with no export", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  auto first = s.refresh();  // a whole manifest: what the store lacks is exported
  CHECK_FALSE(first.steps.partial);
  CHECK(first.blobs_inlined == 0);

  s.guest("printf 'int main(void) {\\n  return 3;\\n}\\n' > src/app.c && echo 'agent line' >> notes.txt && rm untracked.txt && "
          "printf 'added\\n' > 'new file.txt' && ln -s README.md readme-link");
  auto set = s.refresh();
  CHECK(set.refused.empty());
  CHECK(set.steps.partial);
  CHECK(set.steps.exported == 0);  // every changed file came inline: no workspace.export
  CHECK(set.steps.inlined == 4);   // src/app.c, notes.txt, new file.txt, readme-link (untracked.txt is a removal)
  CHECK(set.blobs_inlined == 4);
  CHECK(set.blobs_fetched == 4);
  CHECK(set.steps.fetch_ms == 0);
  // The diff is built from those blobs.
  REQUIRE(set.changes->find("src/app.c"));
  CHECK(set.changes->find("src/app.c")->status == review::ChangeStatus::kModified);
  auto app = set.changes->content("src/app.c", review::Side::kCurrent);
  REQUIRE(app.ok());
  CHECK(app->bytes == "int main(void) {\n  return 3;\n}\n");
  auto notes = set.changes->content("notes.txt", review::Side::kCurrent);
  REQUIRE(notes.ok());
  CHECK(notes->bytes == "keep me\nuncommitted edit\nagent line\n");
  auto added = set.changes->content("new file.txt", review::Side::kCurrent);
  REQUIRE(added.ok());
  CHECK(added->bytes == "added\n");
  auto link = set.changes->content("readme-link", review::Side::kCurrent);
  REQUIRE(link.ok());
  CHECK(link->bytes == "README.md");
  REQUIRE(set.changes->find("untracked.txt"));
  CHECK(set.changes->find("untracked.txt")->status == review::ChangeStatus::kDeleted);

  // A file over the inline bound (1 MiB) still comes through workspace.export; the small one inline.
  s.guest("head -c 1200000 /dev/zero | tr '\\0' x > big.txt && echo again >> notes.txt");
  auto mixed = s.refresh();
  CHECK(mixed.steps.inlined == 1);
  CHECK(mixed.steps.exported == 1);
  CHECK(mixed.blobs_fetched == 2);
  auto big = mixed.changes->content("big.txt", review::Side::kCurrent);
  REQUIRE(big.ok());
  CHECK(big->bytes == std::string(1200000, 'x'));
}

TEST_CASE("apply merges the user's concurrent edit, reports a conflict and leaves that file alone", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  s.guest("sed -i 's/line 9/line 9 from the agent/' README.md && echo 'agent line' >> notes.txt");
  auto set = s.refresh();
  REQUIRE(set.changes->list().size() == 2);
  // Meanwhile on the host: a non-overlapping edit to README.md, an overlapping one to notes.txt.
  std::string readme = read_file(s.repo.dir / "README.md");
  readme.replace(readme.find("line 3"), 6, "line 3 from the user");
  write_file(s.repo.dir / "README.md", readme);
  write_file(s.repo.dir / "notes.txt", "keep me\nuncommitted edit\nuser line\n");

  auto results = s.apply(review::Selection::all());
  std::map<std::string, review::ApplyStatus> by_path;
  for (const auto& r : results) by_path[r.path] = r.status;
  CHECK(by_path["README.md"] == review::ApplyStatus::kMerged);
  CHECK(by_path["notes.txt"] == review::ApplyStatus::kConflict);
  std::string merged = read_file(s.repo.dir / "README.md");
  CHECK(merged.find("line 3 from the user") != std::string::npos);
  CHECK(merged.find("line 9 from the agent") != std::string::npos);
  CHECK(read_file(s.repo.dir / "notes.txt") == "keep me\nuncommitted edit\nuser line\n");  // untouched
}

TEST_CASE("branch mode commits the changes on lockroom/<name> without touching the checkout", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  s.guest("echo 'from the agent' > agent.txt");
  std::string before = s.repo.fingerprint();
  std::string head = sh("git -C " + s.repo.dir.string() + " rev-parse HEAD");
  auto ws = s.w.manager->workspace(s.id);
  REQUIRE(ws.ok());
  s.refresh();
  auto outcome = s.await<review::BranchOutcome>([&](auto done) {
    ws->first->apply_branch(*ws->second, s.last_view, review::Selection::all(), core::BranchApply{"task-1", false}, nullptr, done);
  });
  CHECK(outcome.created);
  CHECK(outcome.ref_name == "refs/heads/lockroom/task-1");
  REQUIRE(outcome.snapshot_commit);  // the workspace had uncommitted edits: a commit of their own, below the sandbox's
  CHECK(sh("git -C " + s.repo.dir.string() + " rev-parse lockroom/task-1^^") == head);
  CHECK(sh("git -C " + s.repo.dir.string() + " show lockroom/task-1:agent.txt") == "from the agent\n");
  CHECK(sh("git -C " + s.repo.dir.string() + " rev-parse HEAD") == head);
  // The checkout is as it was, except the new ref in .git.
  std::string after = s.repo.fingerprint();
  auto strip_git = [](const std::string& f) {
    std::stringstream in(f), out;
    std::string line;
    bool skip = false;
    while (std::getline(in, line)) {
      if (line.rfind("./", 0) == 0) skip = line.rfind("./.git/", 0) == 0;
      if (!skip) out << line << "\n";
    }
    return out.str();
  };
  CHECK(strip_git(after) == strip_git(before));
}

TEST_CASE("workspace sync brings host edits in and keeps the agent's own", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  s.guest("echo 'agent' > agent.txt");
  write_file(s.repo.dir / "src/app.c", "int main(void) {\n  return 7;\n}\n");
  auto ws = s.w.manager->workspace(s.id);
  REQUIRE(ws.ok());
  auto transfer = s.await<core::WorkspaceTransfer>([&](auto done) { ws->first->sync(*ws->second, nullptr, done); });
  CHECK(transfer.objects <= 4);  // one blob, its trees, the commit: only what changed
  CHECK(s.guest("cat src/app.c") == "int main(void) {\n  return 7;\n}\n");
  CHECK(s.guest("cat agent.txt") == "agent\n");
  auto set = s.refresh();
  REQUIRE(set.changes->list().size() == 1);
  CHECK(set.changes->list()[0].path == "agent.txt");
}

TEST_CASE("the guest's git ignores what the host's does: info/exclude comes along", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  CHECK_THAT(s.guest("cat .git/info/exclude"), Catch::Contains("# the repository's info/exclude\n*.swp\n/scratch/\n"));
  s.guest("echo swap > .notes.txt.swp && mkdir -p scratch src && echo x > scratch/out && echo y > src/.app.c.swp && "
          "echo real > real.txt");
  CHECK(s.guest("git status --porcelain") == "?? real.txt\n");
  auto set = s.refresh();
  REQUIRE(set.changes->list().size() == 1);
  CHECK(set.changes->list()[0].path == "real.txt");
}

TEST_CASE("a large file comes back whole; one over the limit is refused by name and keeps its snapshot version", "[sandbox][workspace]") {
  workspace::snapshot::SnapshotLimits limits;
  limits.max_file_bytes = 2 << 20;
  WorkspaceSandbox s(limits);
  // 1.5 MB of text (over the inline bound: exported), 3 MB over notes.txt (over the limit).
  s.guest("yes 'a line of a large file' | head -c 1500000 > large.txt && head -c 3000000 /dev/zero > notes.txt && "
          "echo more >> README.md");
  auto set = s.refresh();
  REQUIRE(set.refused.size() == 1);
  CHECK(set.refused[0].path == "notes.txt");
  CHECK_THAT(set.refused[0].reason, Catch::Contains("3000000 bytes, over the limit of 2097152"));
  CHECK(find_change(set, "notes.txt") == nullptr);  // not offered as a change, and not as a deletion
  // ... and the editor hears that the guest misbehaved.
  REQUIRE_FALSE(s.w.events.misbehaved.empty());
  const auto& [who, event] = s.w.events.misbehaved.back();
  CHECK(who == s.id);
  CHECK(event.source == "workspace");
  CHECK(event.count == 1);
  REQUIRE(event.entries.size() == 1);
  CHECK(event.entries[0].path == "notes.txt");
  CHECK_THAT(event.message, Catch::Contains("1 entry lockroom refused") && Catch::Contains("notes.txt"));
  REQUIRE(find_change(set, "README.md"));
  REQUIRE(find_change(set, "large.txt"));
  std::string expected;
  while (expected.size() < 1500000) expected += "a line of a large file\n";
  expected.resize(1500000);
  auto large = set.changes->content("large.txt", review::Side::kCurrent);
  REQUIRE(large.ok());
  CHECK(large->bytes == expected);

  // Applying everything writes what was reviewed and leaves the refused file as it is.
  auto results = s.apply(review::Selection::all());
  CHECK(results.size() == 2);
  CHECK(read_file(s.repo.dir / "large.txt") == expected);
  CHECK(read_file(s.repo.dir / "notes.txt") == "keep me\nuncommitted edit\n");
}

TEST_CASE("a refresh while a process writes sees one consistent version of each file", "[sandbox][workspace]") {
  WorkspaceSandbox s;
  s.refresh();  // the view later refreshes patch, with the changed files' content read once, inline
  // Appends numbered lines as fast as it can while the review lists and fetches.
  std::string writer =
      s.w.start(s.id, {"sh", "-c", "cd /workspace && i=0; while [ $i -lt 3000 ]; do echo \"line $i\" >> busy.log; i=$((i+1)); done"});
  s.guest("until [ -s busy.log ]; do :; done");  // the writer has begun
  auto set = s.refresh();
  REQUIRE(set.changes->find("busy.log"));
  auto busy = set.changes->content("busy.log", review::Side::kCurrent);
  REQUIRE(busy.ok());
  // Whole lines 0..k, in order: a version the file really had, not a torn read.
  INFO(busy->bytes.size() << " bytes");
  REQUIRE_FALSE(busy->bytes.empty());
  CHECK(busy->bytes.back() == '\n');
  std::istringstream lines(busy->bytes);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) REQUIRE(line == "line " + std::to_string(n++));
  s.w.wait_exit(writer);
  // Once the writer is done, the next refresh has all of it.
  auto after = s.refresh();
  auto done = after.changes->content("busy.log", review::Side::kCurrent);
  REQUIRE(done.ok());
  CHECK(std::count(done->bytes.begin(), done->bytes.end(), '\n') == 3000);
}
