// Refused entries keep their base version (see keep_base.h).
#include "server/workspace/review/keep_base.h"

#include <algorithm>
#include <string_view>

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

using TreeEntryPtr = GitPtr<git_tree_entry, git_tree_entry_free>;

bool holds(const std::vector<ManifestFile>& files, std::string_view path) {
  auto it = std::lower_bound(files.begin(), files.end(), path, [](const ManifestFile& f, std::string_view p) { return f.path < p; });
  return it != files.end() && it->path == path;
}

// `path` cannot be a file next to `files`: it is already there, a folder of it, or under a file.
bool clashes(const std::vector<ManifestFile>& files, const std::string& path) {
  std::string prefix = path + "/";
  auto at = std::lower_bound(files.begin(), files.end(), path, [](const ManifestFile& f, const std::string& p) { return f.path < p; });
  if (at != files.end() && at->path == path) return true;
  auto child = std::lower_bound(at, files.end(), prefix, [](const ManifestFile& f, const std::string& p) { return f.path < p; });
  if (child != files.end() && child->path.compare(0, prefix.size(), prefix) == 0) return true;
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
    if (holds(files, std::string_view(path).substr(0, slash))) return true;
  return false;
}

}  // namespace

Result<std::size_t> keep_base_versions(git_repository* store, const git_oid& base_tree, Manifest& manifest) {
  if (manifest.refused_paths.empty()) return std::size_t{0};
  git_tree* raw_tree = nullptr;
  if (int rc = git_tree_lookup(&raw_tree, store, &base_tree); rc != 0)
    return make_error(ErrorCode::kInternal, git_error_text("the snapshot's tree " + oid_hex(base_tree), rc));
  TreePtr tree(raw_tree);
  git_odb* raw_odb = nullptr;
  if (int rc = git_repository_odb(&raw_odb, store); rc != 0) return make_error(ErrorCode::kInternal, git_error_text("the store's objects", rc));
  OdbPtr odb(raw_odb);

  std::size_t kept = 0;
  for (const auto& path : manifest.refused_paths) {
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str()) != 0) continue;  // the base has no such file
    TreeEntryPtr entry(raw_entry);
    auto mode = static_cast<std::uint32_t>(git_tree_entry_filemode(entry.get()));
    if (mode != kModeFile && mode != kModeExecutable && mode != kModeSymlink) continue;  // a folder or a submodule
    if (clashes(manifest.files, path)) continue;
    std::size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    const git_oid* id = git_tree_entry_id(entry.get());
    if (int rc = git_odb_read_header(&size, &type, odb.get(), id); rc != 0)
      return make_error(ErrorCode::kInternal, git_error_text("the snapshot's version of " + printable(path), rc));
    ManifestFile file{path, mode, *id, size};
    auto at = std::lower_bound(manifest.files.begin(), manifest.files.end(), path,
                               [](const ManifestFile& f, const std::string& p) { return f.path < p; });
    manifest.files.insert(at, std::move(file));
    manifest.total_bytes += size;
    ++kept;
  }
  return kept;
}

}  // namespace lockroom::workspace::review
