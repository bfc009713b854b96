// Test helpers for the review library: temp dirs, a bare store repo, trees and manifests built
// from a list of files, files written to and read back from a real directory.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/workspace/git_util.h"
#include "server/workspace/review/manifest.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review::testing {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/lockroom-review-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline void check_git(int rc, const char* what) {
  if (rc < 0) throw std::runtime_error(git_error_text(what, rc));
}

inline RepoPtr init_repo(const std::string& path, bool bare) {
  ensure_libgit2();
  git_repository* raw = nullptr;
  check_git(git_repository_init(&raw, path.c_str(), bare ? 1 : 0), "init");
  return RepoPtr(raw);
}

struct FileSpec {
  std::string path;
  std::string content;
  std::uint32_t mode = kModeFile;
};
using Files = std::vector<FileSpec>;

inline git_oid blob_id(const std::string& content) {
  git_oid id;
  git_odb_hash(&id, content.data(), content.size(), GIT_OBJECT_BLOB);
  return id;
}

// Writes the blobs and the tree of `files` into `repo`.
inline git_oid tree_of(git_repository* repo, const Files& files) {
  git_index* raw = nullptr;
  check_git(git_index_new(&raw), "index");
  IndexPtr index(raw);
  for (const FileSpec& f : files) {
    git_index_entry entry{};
    entry.path = f.path.c_str();
    entry.mode = f.mode;
    check_git(git_blob_create_from_buffer(&entry.id, repo, f.content.data(), f.content.size()), "blob");
    check_git(git_index_add(index.get(), &entry), "index add");
  }
  git_oid tree;
  check_git(git_index_write_tree_to(&tree, index.get(), repo), "write tree");
  return tree;
}

inline std::vector<ManifestEntry> manifest_entries(const Files& files) {
  std::vector<ManifestEntry> entries;
  for (const FileSpec& f : files) entries.push_back({f.path, f.mode, oid_hex(blob_id(f.content)), f.content.size()});
  return entries;
}

// Files with `changes` applied: same path replaces, absent content (marked by mode 0) deletes.
inline Files with(Files files, const Files& changes) {
  for (const FileSpec& change : changes) {
    bool found = false;
    for (auto it = files.begin(); it != files.end(); ++it) {
      if (it->path != change.path) continue;
      found = true;
      if (change.mode == 0) files.erase(it);
      else *it = change;
      break;
    }
    if (!found && change.mode != 0) files.push_back(change);
  }
  return files;
}

inline void write_files(const std::string& root, const Files& files) {
  for (const FileSpec& f : files) {
    fs::path p = fs::path(root) / f.path;
    fs::create_directories(p.parent_path());
    if (f.mode == kModeSymlink) {
      fs::create_symlink(f.content, p);
      continue;
    }
    std::ofstream(p, std::ios::binary) << f.content;
    ::chmod(p.c_str(), f.mode == kModeExecutable ? 0755 : 0644);
  }
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every entry under `root` (not following symlinks): path → "type mode content".
inline std::map<std::string, std::string> snapshot_dir(const std::string& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    std::string rel = fs::relative(it->path(), root).string();
    struct stat st;
    ::lstat(it->path().c_str(), &st);
    std::string state = std::to_string(st.st_mode) + " ";
    if (S_ISLNK(st.st_mode)) state += fs::read_symlink(it->path()).string();
    else if (S_ISREG(st.st_mode)) state += read_file(it->path().string());
    out[rel] = state;
  }
  return out;
}

}  // namespace lockroom::workspace::review::testing
