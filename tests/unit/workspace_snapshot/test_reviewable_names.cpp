// Host file names and the review: every name the snapshot takes must come back from the guest
// through the review's path rules unchanged (no refusal, no phantom deletion); a name the review
// would refuse is left out at snapshot time and listed as skipped, with the reason.
// Real files, the real snapshot and the real review library.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "server/workspace/review/apply_worktree.h"
#include "server/workspace/review/blob_store.h"
#include "server/workspace/review/changes.h"
#include "server/workspace/review/manifest.h"
#include "server/workspace/review/path_rules.h"
#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;
using namespace lockroom::workspace::snapshot;
namespace review = lockroom::workspace::review;

namespace {

// What a guest that checked out `files` lists back: path, mode, blob id and size of each.
std::vector<review::ManifestEntry> listed_back(const std::map<std::string, TreeFile>& files) {
  std::vector<review::ManifestEntry> out;
  for (const auto& [path, file] : files) {
    git_oid id;
    git_odb_hash(&id, file.content.data(), file.content.size(), GIT_OBJECT_BLOB);
    out.push_back({path, file.mode, hex(id), file.content.size()});
  }
  return out;
}

std::string str(const fs::path& p) { return p.string(); }

const SkippedEntry* skipped_as(const SnapshotResult& r, const std::string& shown) {
  auto it = std::find_if(r.skipped.begin(), r.skipped.end(), [&](const SkippedEntry& e) { return e.path == shown; });
  return it == r.skipped.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("names the review would refuse are left out and listed with the reason; the rest come back unchanged") {
  TempDir ws, store;
  write_file(ws / "ok.txt", "ok\n");
  write_file(ws / "Icon\r", "");                                // macOS custom folder icon
  write_file(ws / "tab\tand newline\nname", "odd\n");
  write_file(ws / "caf\xe9.txt", "latin-1 name\n");              // not UTF-8
  write_file(ws / "ctl\x01" "dir/inner.txt", "inside a folder with a control character\n");
  write_file(ws / ".GIT/config", "a folder git would take for its own on macOS and Windows\n");
  write_file(ws / "back\\slash.txt", "a backslash is an ordinary byte\n");
  write_file(ws / "dir with space/naïve café.txt", "crème\n");

  auto r = snap(str(ws.path()), str(store.path()));
  auto files = snapshot_files(str(store.path()), r.commit_id);
  CHECK(paths_of(files) == std::vector<std::string>{"back\\slash.txt", "dir with space/naïve café.txt", "ok.txt"});

  struct Expected {
    const char* shown;
    const char* reason_part;
  };
  for (const Expected& e : {Expected{"Icon\\x0d", "control character"},
                            Expected{"tab\\x09and newline\\x0aname", "control character"},
                            Expected{"caf\\xe9.txt", "UTF-8"},
                            Expected{"ctl\\x01dir/", "control character"},
                            Expected{".GIT/", "git's own directory"}}) {
    INFO(e.shown);
    const SkippedEntry* skipped = skipped_as(r, e.shown);
    REQUIRE(skipped != nullptr);
    CHECK_THAT(skipped->reason, Catch::Contains(e.reason_part) && Catch::Contains("rename it"));
  }
  CHECK(r.skipped.size() == 5);  // the folder once, not each file in it
  CHECK_NOTHROW(to_json(r).dump());  // every path in the result is valid UTF-8 for the editor's JSON

  // What the guest lists back passes the review as it is: nothing refused, nothing changed.
  auto manifest = review::validate_manifest(listed_back(files));
  REQUIRE(manifest.ok());
  CHECK(manifest->refused.empty());
  REQUIRE(manifest->files.size() == files.size());

  git_repository* raw = nullptr;
  REQUIRE(git_repository_open_bare(&raw, (str(store.path())).c_str()) == 0);
  RepoPtr repo(raw);
  git_oid base_tree;
  REQUIRE(git_oid_fromstr(&base_tree, r.tree_id.c_str()) == 0);
  auto result_tree = review::build_result_tree(repo.get(), *manifest);
  REQUIRE(result_tree.ok());
  CHECK(hex(*result_tree) == r.tree_id);
  auto unchanged = review::Changes::compute(repo.get(), base_tree, *result_tree);
  REQUIRE(unchanged.ok());
  CHECK(unchanged->list().empty());

  // The agent edits the backslash file: it is reviewed and applied to the host like any other.
  auto edited_files = files;
  edited_files["back\\slash.txt"].content = "edited in the sandbox\n";
  const std::string& content = edited_files["back\\slash.txt"].content;
  git_oid blob;
  REQUIRE(git_blob_create_from_buffer(&blob, repo.get(), content.data(), content.size()) == 0);
  auto edited = review::validate_manifest(listed_back(edited_files));
  REQUIRE(edited.ok());
  CHECK(edited->refused.empty());
  auto edited_tree = review::build_result_tree(repo.get(), *edited);
  REQUIRE(edited_tree.ok());
  auto changes = review::Changes::compute(repo.get(), base_tree, *edited_tree);
  REQUIRE(changes.ok());
  REQUIRE(changes->list().size() == 1);
  CHECK(changes->list()[0].path == "back\\slash.txt");
  auto applied = review::apply_worktree(repo.get(), base_tree, *edited_tree, str(ws.path()), review::Selection{});
  REQUIRE(applied.ok());
  REQUIRE(applied->size() == 1);
  CHECK((*applied)[0].status == review::ApplyStatus::kApplied);
  CHECK(read_file(ws / "back\\slash.txt") == "edited in the sandbox\n");
  CHECK(read_file(ws / "Icon\r").empty());  // the files left out are still there, untouched
  CHECK(read_file(ws / "caf\xe9.txt") == "latin-1 name\n");
}

TEST_CASE("an overlong path is left out by name, its shorter siblings are taken") {
  TempDir ws, store;
  // 17 folders of 250 bytes: each component is legal, the whole path is over the review's 4096
  // bytes (and over PATH_MAX from /, so it is made and removed folder by folder).
  const std::vector<std::string> folders = [] {
    std::vector<std::string> out;
    for (int i = 0; i < 17; ++i) out.push_back(std::string(250, static_cast<char>('a' + i)));
    return out;
  }();
  std::vector<int> fds{open(str(ws.path()).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  REQUIRE(fds.back() >= 0);
  for (const auto& name : folders) {
    REQUIRE(mkdirat(fds.back(), name.c_str(), 0755) == 0);
    fds.push_back(openat(fds.back(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fds.back() >= 0);
  }
  int file = openat(fds.back(), "deep.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(file >= 0);
  close(file);
  write_file(ws / "short.txt", "s\n");

  auto r = snap(str(ws.path()), str(store.path()));
  CHECK(paths_of(snapshot_files(str(store.path()), r.commit_id)) == std::vector<std::string>{"short.txt"});
  REQUIRE(r.skipped.size() == 1);
  CHECK_THAT(r.skipped[0].reason, Catch::Contains("4096"));
  CHECK(r.skipped[0].path.size() <= lockroom::workspace::review::kMaxPathBytes + 4);  // cut, with "..." and the folder's "/"

  REQUIRE(unlinkat(fds.back(), "deep.txt", 0) == 0);
  for (std::size_t i = folders.size(); i-- > 0;) {
    close(fds[i + 1]);
    REQUIRE(unlinkat(fds[i], folders[i].c_str(), AT_REMOVEDIR) == 0);
  }
  close(fds[0]);
}
