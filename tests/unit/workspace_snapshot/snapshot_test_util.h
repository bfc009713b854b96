// Helpers for the snapshot tests: real git repositories made with libgit2, reading a snapshot's
// tree back, and fingerprints of a directory to prove nothing changed (temp directories are
// tests/support/temp_dir.h's TempDir).
// libgit2's global and system config are pointed at an empty temp directory, so the machine's
// own ~/.gitconfig (excludes, templates) never leaks into a test.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "server/workspace/git_util.h"
#include "server/workspace/snapshot/snapshot.h"
#include "server/workspace/snapshot/snapshot_store.h"
#include "tests/support/temp_dir.h"

namespace snaptest {

namespace fs = std::filesystem;
using namespace lockroom::workspace;

using lockroom::testing::TempDir;

// Points libgit2's global, XDG and system config search paths at `dir` (empty unless a test
// writes a .gitconfig there); the first call uses a process-wide empty directory.
inline void set_git_config_home(const std::string& dir) {
  for (int level : {GIT_CONFIG_LEVEL_GLOBAL, GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_PROGRAMDATA}) {
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, dir.c_str());
  }
}

inline void isolate_git_config() {
  ensure_libgit2();
  static const TempDir empty_home{"lockroom-snap-home"};  // removed when the process exits
  set_git_config_home(empty_home.path());
}

// Every test binary that includes this header starts with the machine's git config shut out.
inline const bool kGitConfigIsolated = (isolate_git_config(), true);

inline void write_file(const std::string& path, const std::string& content, mode_t mode = 0644) {
  fs::create_directories(fs::path(path).parent_path());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
  }
  REQUIRE(chmod(path.c_str(), mode) == 0);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Sets the mtime of every file, symlink and directory under `dir` (but not inside .git) 10 s into the past, so the stat cache trusts it
// (files written in the 2 s before a snapshot are read again next time, by design).
inline void age_files(const std::string& dir) {
  timeval past[2];
  gettimeofday(&past[0], nullptr);
  past[0].tv_sec -= 10;
  past[1] = past[0];
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().string().find("/.git/") == std::string::npos) lutimes(e.path().c_str(), past);
  }
}

// Sets one file's mtime `seconds` into the past.
inline void age_file(const std::string& path, int seconds) {
  timeval past[2];
  gettimeofday(&past[0], nullptr);
  past[0].tv_sec -= seconds;
  past[1] = past[0];
  REQUIRE(utimes(path.c_str(), past) == 0);
}

// A real repository with the files currently in its working tree committed (ignores honoured).
class TestRepo {
 public:
  explicit TestRepo(const std::string& dir) : dir_(dir) {
    isolate_git_config();
    git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;
    opts.flags = GIT_REPOSITORY_INIT_MKPATH;
    opts.initial_head = "main";
    git_repository* raw = nullptr;
    REQUIRE(git_repository_init_ext(&raw, dir.c_str(), &opts) == 0);
    repo_.reset(raw);
  }
  git_repository* get() const { return repo_.get(); }

  // Stages everything (like `git add -A`), commits, and returns the commit id.
  git_oid commit_all(const char* message = "commit") {
    git_index* raw_index = nullptr;
    REQUIRE(git_repository_index(&raw_index, repo_.get()) == 0);
    IndexPtr index(raw_index);
    REQUIRE(git_index_add_all(index.get(), nullptr, GIT_INDEX_ADD_DEFAULT, nullptr, nullptr) == 0);
    REQUIRE(git_index_update_all(index.get(), nullptr, nullptr, nullptr) == 0);
    REQUIRE(git_index_write(index.get()) == 0);
    return commit_index(index.get(), message);
  }

  // Adds one path even if ignored (like `git add -f`), then commits.
  git_oid force_add_and_commit(const std::string& path) {
    git_index* raw_index = nullptr;
    REQUIRE(git_repository_index(&raw_index, repo_.get()) == 0);
    IndexPtr index(raw_index);
    REQUIRE(git_index_add_bypath(index.get(), path.c_str()) == 0);
    REQUIRE(git_index_write(index.get()) == 0);
    return commit_index(index.get(), "force add");
  }

  git_oid commit_index(git_index* index, const char* message) {
    git_oid tree_id, commit_id;
    REQUIRE(git_index_write_tree(&tree_id, index) == 0);
    git_tree* raw_tree = nullptr;
    REQUIRE(git_tree_lookup(&raw_tree, repo_.get(), &tree_id) == 0);
    TreePtr tree(raw_tree);
    git_signature* raw_sig = nullptr;
    REQUIRE(git_signature_new(&raw_sig, "Test", "test@example.com", 1700000000, 0) == 0);
    SignaturePtr sig(raw_sig);
    git_object* parent = nullptr;
    const git_commit* parents[1] = {nullptr};
    size_t parent_count = 0;
    if (git_revparse_single(&parent, repo_.get(), "HEAD") == 0) {
      parents[0] = reinterpret_cast<git_commit*>(parent);
      parent_count = 1;
    }
    REQUIRE(git_commit_create(&commit_id, repo_.get(), "HEAD", sig.get(), sig.get(), nullptr, message, tree.get(),
                              parent_count, parents) == 0);
    git_object_free(parent);
    return commit_id;
  }

 private:
  std::string dir_;
  RepoPtr repo_;
};

inline std::string hex(const git_oid& id) {
  char text[GIT_OID_HEXSZ + 1];
  git_oid_tostr(text, sizeof text, &id);
  return text;
}

struct TreeFile {
  unsigned mode = 0;
  std::string content;
  bool operator==(const TreeFile& o) const { return mode == o.mode && content == o.content; }
};

inline void read_tree_into(git_repository* repo, const git_tree* tree, const std::string& prefix,
                           std::map<std::string, TreeFile>& out) {
  for (size_t i = 0; i < git_tree_entrycount(tree); ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(tree, i);
    const std::string path = prefix + git_tree_entry_name(e);
    if (git_tree_entry_type(e) == GIT_OBJECT_TREE) {
      git_tree* sub = nullptr;
      REQUIRE(git_tree_lookup(&sub, repo, git_tree_entry_id(e)) == 0);
      TreePtr owned(sub);
      read_tree_into(repo, sub, path + "/", out);
      continue;
    }
    TreeFile f;
    f.mode = git_tree_entry_filemode(e);
    if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
      git_blob* blob = nullptr;
      REQUIRE(git_blob_lookup(&blob, repo, git_tree_entry_id(e)) == 0);
      BlobPtr owned(blob);
      f.content.assign(static_cast<const char*>(git_blob_rawcontent(blob)), git_blob_rawsize(blob));
    }
    out[path] = f;
  }
}

// Every file of a snapshot commit in the store: path → mode and content.
inline std::map<std::string, TreeFile> snapshot_files(const std::string& store_dir, const std::string& commit_hex) {
  git_repository* raw = nullptr;
  REQUIRE(git_repository_open_bare(&raw, store_dir.c_str()) == 0);
  RepoPtr repo(raw);
  git_oid id;
  REQUIRE(git_oid_fromstr(&id, commit_hex.c_str()) == 0);
  git_commit* commit = nullptr;
  REQUIRE(git_commit_lookup(&commit, repo.get(), &id) == 0);
  CommitPtr owned_commit(commit);
  git_tree* tree = nullptr;
  REQUIRE(git_commit_tree(&tree, commit) == 0);
  TreePtr owned_tree(tree);
  std::map<std::string, TreeFile> out;
  read_tree_into(repo.get(), tree, "", out);
  return out;
}

inline std::vector<std::string> paths_of(const std::map<std::string, TreeFile>& files) {
  std::vector<std::string> out;
  for (const auto& [path, _] : files) out.push_back(path);
  return out;
}

// A fingerprint of everything under `dir`: path → type, mode, size, mtime and content (or link
// target). Equal fingerprints mean nothing was created, deleted, modified or touched.
inline std::map<std::string, std::string> fingerprint(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    struct stat st {};
    REQUIRE(lstat(it->path().c_str(), &st) == 0);
    std::string desc = std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
                       std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode)) {
      desc += " " + read_file(it->path().string());
    } else if (S_ISLNK(st.st_mode)) {
      desc += " -> " + fs::read_symlink(it->path()).string();
    }
    out[fs::relative(it->path(), dir).string()] = desc;
  }
  return out;
}

// take_snapshot() that must succeed.
inline lockroom::workspace::snapshot::SnapshotResult snap(const std::string& workspace, const std::string& store,
                                                          const lockroom::workspace::snapshot::SnapshotOptions& options = {}) {
  auto r = lockroom::workspace::snapshot::take_snapshot(workspace, store, options);
  if (!r) FAIL(r.error().message);
  return std::move(r).value();
}

}  // namespace snaptest
