// Applying changes as a branch in a real user repository, without touching its checkout.
#include <catch2/catch.hpp>

#include "server/workspace/review/apply_branch.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace;
using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;
using lockroom::ErrorCode;
using lockroom::Result;

namespace {

std::string numbered_lines(int count) {
  std::string text;
  for (int i = 1; i <= count; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

// A user's repository with one commit on HEAD (index and worktree matching it), and lockroom's
// store holding the base tree: a snapshot of the user's worktree.
struct UserRepo {
  TempDir dir;
  std::string work = dir / "user";
  RepoPtr repo;
  RepoPtr store = init_repo(dir / "store.git", true);
  git_oid head{};
  Files committed;

  explicit UserRepo(Files files) : committed(std::move(files)) {
    fs::create_directories(work);
    repo = init_repo(work, false);
    write_files(work, committed);
    git_oid tree = tree_of(repo.get(), committed);
    git_tree* raw_tree = nullptr;
    check_git(git_tree_lookup(&raw_tree, repo.get(), &tree), "tree");
    TreePtr owned_tree(raw_tree);
    git_signature* raw_sig = nullptr;
    check_git(git_signature_new(&raw_sig, "User", "user@example.com", 1700000000, 0), "signature");
    SignaturePtr sig(raw_sig);
    check_git(git_commit_create(&head, repo.get(), "HEAD", sig.get(), sig.get(), nullptr, "initial\n", owned_tree.get(), 0,
                                nullptr),
              "commit");
    git_index* raw_index = nullptr;
    check_git(git_repository_index(&raw_index, repo.get()), "index");
    IndexPtr index(raw_index);
    check_git(git_index_read_tree(index.get(), owned_tree.get()), "read tree");
    check_git(git_index_write(index.get()), "write index");
  }

  // HEAD file, index file, every ref and the whole worktree (outside .git).
  std::string fingerprint() const {
    std::string print = read_file(work + "/.git/HEAD") + "\n" + read_file(work + "/.git/index");
    git_reference* raw = nullptr;
    check_git(git_repository_head(&raw, repo.get()), "head");
    ReferencePtr head_ref(raw);
    print += oid_hex(*git_reference_target(head_ref.get()));
    for (auto& [path, state] : snapshot_dir(work)) {
      if (path.rfind(".git", 0) == 0) continue;
      print += path + "=" + state + "\n";
    }
    return print;
  }

  Result<BranchOutcome> branch(const git_oid& base, const git_oid& result, const std::string& name,
                               const Selection& selection = Selection::all(), bool force = false) {
    BranchRequest request;
    request.repo_path = work;
    request.head_at_snapshot = head;
    request.name = name;
    request.force = force;
    return apply_branch(store.get(), base, result, selection, request);
  }

  CommitPtr commit(const git_oid& id) const {
    git_commit* raw = nullptr;
    check_git(git_commit_lookup(&raw, repo.get(), &id), "commit lookup");
    return CommitPtr(raw);
  }

  // The content of `path` in the tree of commit `id`, or "<absent>".
  std::string file_in(const git_oid& id, const std::string& path) const {
    CommitPtr c = commit(id);
    git_tree* raw_tree = nullptr;
    check_git(git_commit_tree(&raw_tree, c.get()), "tree");
    TreePtr tree(raw_tree);
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str()) < 0) return "<absent>";
    GitPtr<git_tree_entry, git_tree_entry_free> entry(raw_entry);
    git_blob* raw_blob = nullptr;
    check_git(git_blob_lookup(&raw_blob, repo.get(), git_tree_entry_id(entry.get())), "blob");
    BlobPtr blob(raw_blob);
    return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())), git_blob_rawsize(blob.get()));
  }

  git_oid ref_target(const std::string& name) const {
    git_oid id;
    check_git(git_reference_name_to_id(&id, repo.get(), name.c_str()), "ref");
    return id;
  }
};

}  // namespace

TEST_CASE("branch: commits the result on the snapshot's HEAD without touching HEAD, index or worktree", "[apply_branch]") {
  UserRepo u({{"a.txt", "a\n"}, {"src/b.c", numbered_lines(10)}});
  git_oid base = tree_of(u.store.get(), u.committed);  // worktree == HEAD
  Files result_files = with(u.committed, {{"src/b.c", numbered_lines(11)}, {"new dir/new.txt", "new\n"}, {"a.txt", "", 0}});
  git_oid result = tree_of(u.store.get(), result_files);
  std::string before = u.fingerprint();

  auto outcome = u.branch(base, result, "sandbox-1");
  REQUIRE(outcome.ok());
  CHECK(outcome->created);
  CHECK(outcome->conflicts.empty());
  CHECK(outcome->ref_name == "refs/heads/lockroom/sandbox-1");
  CHECK(oid_hex(u.ref_target(outcome->ref_name)) == oid_hex(outcome->commit));
  CHECK(oid_hex(outcome->tree) == oid_hex(result));

  CommitPtr commit = u.commit(outcome->commit);
  REQUIRE(git_commit_parentcount(commit.get()) == 1);
  CHECK(oid_hex(*git_commit_parent_id(commit.get(), 0)) == oid_hex(u.head));
  CHECK(oid_hex(*git_commit_tree_id(commit.get())) == oid_hex(result));
  CHECK(u.file_in(outcome->commit, "new dir/new.txt") == "new\n");
  CHECK(u.file_in(outcome->commit, "src/b.c") == numbered_lines(11));
  CHECK(u.file_in(outcome->commit, "a.txt") == "<absent>");

  CHECK(u.fingerprint() == before);

  // The name is taken now: refused without force, replaced with it.
  auto again = u.branch(base, result, "sandbox-1");
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == ErrorCode::kWrongState);
  CHECK_THAT(again.error().message, Catch::Contains("lockroom/sandbox-1 already exists"));
  Files other = with(u.committed, {{"a.txt", "other\n"}});
  auto forced = u.branch(base, tree_of(u.store.get(), other), "sandbox-1", Selection::all(), true);
  REQUIRE(forced.ok());
  CHECK(u.file_in(u.ref_target("refs/heads/lockroom/sandbox-1"), "a.txt") == "other\n");
  CHECK(u.fingerprint() == before);
}

TEST_CASE("branch: uncommitted edits and untracked files get a commit of their own below the sandbox's", "[apply_branch]") {
  UserRepo u({{"a.txt", "a as committed\n"}, {"b.txt", numbered_lines(10)}});
  // The worktree, and so the snapshot, has an uncommitted edit and an untracked file.
  Files worktree = with(u.committed, {{"a.txt", "a with an uncommitted edit\n"}, {"untracked.txt", "scratch\n"}});
  write_files(u.work, {{"a.txt", "a with an uncommitted edit\n"}, {"untracked.txt", "scratch\n"}});
  git_oid base = tree_of(u.store.get(), worktree);
  git_oid result = tree_of(u.store.get(), with(worktree, {{"b.txt", numbered_lines(12)}}));
  std::string before = u.fingerprint();

  auto outcome = u.branch(base, result, "two-commits");
  REQUIRE(outcome.ok());
  REQUIRE(outcome->created);
  REQUIRE(outcome->snapshot_commit);
  // The tip: the sandbox's work on top of the snapshot; nothing of the user's is lost.
  CHECK(oid_hex(outcome->tree) == oid_hex(result));
  CHECK(u.file_in(outcome->commit, "b.txt") == numbered_lines(12));
  CHECK(u.file_in(outcome->commit, "a.txt") == "a with an uncommitted edit\n");
  CHECK(u.file_in(outcome->commit, "untracked.txt") == "scratch\n");
  // Below it: the workspace as snapshotted, on HEAD.
  CommitPtr tip = u.commit(outcome->commit);
  CHECK(oid_hex(*git_commit_parent_id(tip.get(), 0)) == oid_hex(*outcome->snapshot_commit));
  CommitPtr snapshot = u.commit(*outcome->snapshot_commit);
  CHECK(oid_hex(*git_commit_tree_id(snapshot.get())) == oid_hex(base));
  CHECK(oid_hex(*git_commit_parent_id(snapshot.get(), 0)) == oid_hex(u.head));
  CHECK(u.file_in(*outcome->snapshot_commit, "b.txt") == numbered_lines(10));
  CHECK(u.fingerprint() == before);
}

TEST_CASE("branch: a change on top of an uncommitted edit to the same lines does not conflict", "[apply_branch]") {
  UserRepo u({{"a.txt", "committed\n"}, {"b.txt", "b\n"}});
  Files worktree = with(u.committed, {{"a.txt", "uncommitted\n"}});
  git_oid base = tree_of(u.store.get(), worktree);
  git_oid result = tree_of(u.store.get(), with(worktree, {{"a.txt", "uncommitted, then the sandbox\n"}, {"b.txt", "b2\n"}}));
  auto outcome = u.branch(base, result, "same-lines");
  REQUIRE(outcome.ok());
  CHECK(outcome->created);
  CHECK(outcome->conflicts.empty());
  REQUIRE(outcome->snapshot_commit);
  CHECK(u.file_in(*outcome->snapshot_commit, "a.txt") == "uncommitted\n");
  CHECK(u.file_in(outcome->commit, "a.txt") == "uncommitted, then the sandbox\n");
  CHECK(u.file_in(outcome->commit, "b.txt") == "b2\n");
}

TEST_CASE("branch: files the snapshot kept out keep HEAD's version; no snapshot commit when it matched HEAD", "[apply_branch]") {
  UserRepo u({{"a.txt", "a\n"}, {".env", "TOKEN=committed-by-mistake\n"}});
  // The snapshot withheld .env (a secret), so the base has no .env although HEAD tracks it.
  Files snapshot;
  for (const FileSpec& f : u.committed)
    if (f.path != ".env") snapshot.push_back(f);
  git_oid base = tree_of(u.store.get(), snapshot);
  git_oid result = tree_of(u.store.get(), with(snapshot, {{"a.txt", "a2\n"}}));
  BranchRequest request;
  request.repo_path = u.work;
  request.head_at_snapshot = u.head;
  request.name = "kept";
  request.kept_out = {".env"};
  auto outcome = apply_branch(u.store.get(), base, result, Selection::all(), request);
  REQUIRE(outcome.ok());
  REQUIRE(outcome->created);
  CHECK_FALSE(outcome->snapshot_commit);  // with .env put back, the snapshot is HEAD's tree
  CHECK(u.file_in(outcome->commit, ".env") == "TOKEN=committed-by-mistake\n");
  CHECK(u.file_in(outcome->commit, "a.txt") == "a2\n");
  CHECK(oid_hex(*git_commit_parent_id(u.commit(outcome->commit).get(), 0)) == oid_hex(u.head));
}

TEST_CASE("branch: a selection commits only the chosen files and hunks", "[apply_branch]") {
  std::string text = numbered_lines(40);
  UserRepo u({{"two.txt", text}, {"other.txt", "other\n"}});
  git_oid base = tree_of(u.store.get(), u.committed);
  std::string both = text;
  both.replace(both.find("line 2\n"), 7, "line two\n");
  both.replace(both.find("line 38\n"), 8, "line thirty-eight\n");
  git_oid result = tree_of(u.store.get(), with(u.committed, {{"two.txt", both}, {"other.txt", "other changed\n"}}));
  auto changes = Changes::compute(u.store.get(), base, result);
  REQUIRE(changes.ok());
  auto diff = changes->diff("two.txt");
  REQUIRE(diff->hunks.size() == 2);

  auto outcome = u.branch(base, result, "partial", Selection::only({{"two.txt", std::vector<std::string>{diff->hunks[0].id}}}));
  REQUIRE(outcome.ok());
  REQUIRE(outcome->created);
  std::string expected = text;
  expected.replace(expected.find("line 2\n"), 7, "line two\n");
  CHECK(u.file_in(outcome->commit, "two.txt") == expected);
  CHECK(u.file_in(outcome->commit, "other.txt") == "other\n");
}

TEST_CASE("branch: bad names, unknown HEAD commits, and an unborn HEAD", "[apply_branch]") {
  UserRepo u(Files{{"a.txt", "a\n"}});
  git_oid base = tree_of(u.store.get(), u.committed);
  git_oid result = tree_of(u.store.get(), with(u.committed, {{"a.txt", "b\n"}}));
  for (const char* bad : {"", "a..b", "bad name", "x.lock", "trailing/", "-/../x"}) {
    INFO(bad);
    auto refused = u.branch(base, result, bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kInvalidInput);
  }

  BranchRequest request;
  request.repo_path = u.work;
  request.name = "unknown-head";
  git_oid_fromstr(&request.head_at_snapshot, "0123456789012345678901234567890123456789");
  auto missing = apply_branch(u.store.get(), base, result, Selection::all(), request);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kNotFound);

  request.name = "unborn";
  request.head_at_snapshot = git_oid{};
  auto unborn = apply_branch(u.store.get(), base, result, Selection::all(), request);
  REQUIRE(unborn.ok());
  REQUIRE(unborn->created);
  CHECK(git_commit_parentcount(u.commit(unborn->commit).get()) == 0);
  CHECK(u.file_in(unborn->commit, "a.txt") == "b\n");
}

TEST_CASE("branch: a path lockroom never writes stays out of the branch", "[apply_branch]") {
  UserRepo u(Files{{"a.txt", "a\n"}});
  git_oid base = tree_of(u.store.get(), u.committed);
  git_tree* raw_base = nullptr;
  REQUIRE(git_tree_lookup(&raw_base, u.store.get(), &base) == 0);
  TreePtr base_tree(raw_base);
  git_treebuilder* raw_builder = nullptr;
  REQUIRE(git_treebuilder_new(&raw_builder, u.store.get(), base_tree.get()) == 0);
  TreeBuilderPtr builder(raw_builder);
  git_oid blob;
  REQUIRE(git_blob_create_from_buffer(&blob, u.store.get(), "evil\n", 5) == 0);
  REQUIRE(git_treebuilder_insert(nullptr, builder.get(), "new.txt", &blob, GIT_FILEMODE_BLOB) == 0);
  std::string evil_name;
  for (std::string name : {"GIT~1", ".GIT", ".git.", ".g\xe2\x80\x8cit"}) {
    if (git_treebuilder_insert(nullptr, builder.get(), name.c_str(), &blob, GIT_FILEMODE_BLOB) == 0) {
      evil_name = name;
      break;
    }
  }
  REQUIRE_FALSE(evil_name.empty());
  git_oid result;
  REQUIRE(git_treebuilder_write(&result, builder.get()) == 0);

  auto outcome = u.branch(base, result, "guarded");
  REQUIRE(outcome.ok());
  REQUIRE(outcome->created);
  REQUIRE(outcome->refused.size() == 1);
  CHECK_THAT(outcome->refused[0].reason, Catch::Contains("git's own directory"));
  CHECK(u.file_in(outcome->commit, "new.txt") == "evil\n");
  CHECK(u.file_in(outcome->commit, evil_name) == "<absent>");
}

TEST_CASE("branch: changes inside a submodule stay out, the rest is committed", "[apply_branch]") {
  // HEAD holds the submodule as a gitlink; the snapshot holds its checked-out files.
  git_oid sub_commit;
  REQUIRE(git_oid_fromstr(&sub_commit, "0123456789abcdef0123456789abcdef01234567") == 0);
  UserRepo u(Files{{"a.txt", "a\n"}});
  {
    CommitPtr head = u.commit(u.head);
    git_tree* raw = nullptr;
    REQUIRE(git_commit_tree(&raw, head.get()) == 0);
    TreePtr tree(raw);
    git_treebuilder* raw_builder = nullptr;
    REQUIRE(git_treebuilder_new(&raw_builder, u.repo.get(), tree.get()) == 0);
    TreeBuilderPtr builder(raw_builder);
    REQUIRE(git_treebuilder_insert(nullptr, builder.get(), "sub", &sub_commit, GIT_FILEMODE_COMMIT) == 0);
    git_oid with_sub;
    REQUIRE(git_treebuilder_write(&with_sub, builder.get()) == 0);
    git_tree* raw_sub_tree = nullptr;
    REQUIRE(git_tree_lookup(&raw_sub_tree, u.repo.get(), &with_sub) == 0);
    TreePtr sub_tree(raw_sub_tree);
    git_signature* raw_sig = nullptr;
    REQUIRE(git_signature_new(&raw_sig, "User", "user@example.com", 1700000100, 0) == 0);
    SignaturePtr sig(raw_sig);
    const git_commit* parents[1] = {head.get()};
    REQUIRE(git_commit_create(&u.head, u.repo.get(), "HEAD", sig.get(), sig.get(), nullptr, "add sub\n", sub_tree.get(), 1,
                              parents) == 0);
  }
  Files snapshot{{"a.txt", "a\n"}, {"sub/f.c", "int f;\n"}};
  git_oid base = tree_of(u.store.get(), snapshot);
  git_oid result = tree_of(u.store.get(), with(snapshot, {{"a.txt", "a, edited\n"}, {"sub/f.c", "int f = 1;\n"}}));

  auto outcome = u.branch(base, result, "with-sub");
  INFO((outcome.ok() ? std::string() : outcome.error().message));
  REQUIRE(outcome.ok());
  REQUIRE(outcome->created);
  CHECK(outcome->conflicts.empty());
  REQUIRE(outcome->refused.size() == 1);
  CHECK(outcome->refused[0].path == "sub/f.c");
  CHECK_THAT(outcome->refused[0].reason, Catch::Contains("inside the submodule sub"));
  CHECK(u.file_in(outcome->commit, "a.txt") == "a, edited\n");
  // The branch still has the gitlink, unchanged.
  CommitPtr commit = u.commit(outcome->commit);
  git_tree* raw_tree = nullptr;
  REQUIRE(git_commit_tree(&raw_tree, commit.get()) == 0);
  TreePtr tree(raw_tree);
  const git_tree_entry* sub = git_tree_entry_byname(tree.get(), "sub");
  REQUIRE(sub != nullptr);
  CHECK(git_tree_entry_filemode(sub) == GIT_FILEMODE_COMMIT);
  CHECK(git_oid_equal(git_tree_entry_id(sub), &sub_commit));
}
