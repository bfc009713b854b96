// The snapshot store: opening, naming and pinning (see snapshot_store.h).
#include "server/workspace/snapshot/snapshot_store.h"

#include <cstdint>

#include "server/workspace/snapshot/store_use.h"

namespace lockroom::workspace::snapshot {
namespace {

bool valid_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

// Packs for guests are built without delta compression: the guest is on the same machine, and
// libgit2's delta search costs seconds on a few thousand files (measured: 10 s for 3,000 headers)
// to save bytes that cross no network. libgit2 skips delta search for objects larger than its
// big-file threshold, which it reads from `pack.deltaCacheSize` (a slip in libgit2; git's name is
// `pack.bigFileThreshold`, set too in case that is fixed). Both live in the store's own config.
Result<void> disable_pack_deltas(git_repository* store, const std::string& store_dir) {
  git_config* raw = nullptr;
  if (int rc = git_repository_config(&raw, store); rc < 0) {
    return make_error(ErrorCode::kUnavailable, git_error_text("cannot read the config of the snapshot store " + store_dir, rc));
  }
  GitPtr<git_config, git_config_free> config(raw);
  for (const char* key : {"pack.deltaCacheSize", "pack.bigFileThreshold"}) {
    std::int64_t value = 0;
    if (git_config_get_int64(&value, config.get(), key) == 0 && value == 1) continue;
    if (int rc = git_config_set_int64(config.get(), key, 1); rc < 0) {
      return make_error(ErrorCode::kUnavailable, git_error_text("cannot configure the snapshot store " + store_dir, rc));
    }
  }
  return {};
}

}  // namespace

std::string workspace_store_key(std::string_view workspace_real_path) {
  ensure_libgit2();
  std::string_view trimmed = workspace_real_path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  std::string_view last = trimmed.substr(trimmed.rfind('/') + 1);
  std::string name;
  for (char c : last.substr(0, 40)) name += valid_id_char(c) && c != '.' ? c : '_';
  if (name.empty()) name = "root";

  git_oid digest;
  git_odb_hash(&digest, trimmed.data(), trimmed.size(), GIT_OBJECT_BLOB);
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &digest);
  return name + "-" + std::string(hex, 16);
}

Result<RepoPtr> open_store(const std::string& store_dir) {
  ensure_libgit2();
  if (auto held = hold_store(store_dir); !held) return held.error();
  git_repository* raw = nullptr;
  if (git_repository_open_bare(&raw, store_dir.c_str()) < 0) {
    git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;
    opts.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH;
    if (int rc = git_repository_init_ext(&raw, store_dir.c_str(), &opts); rc < 0) {
      return make_error(ErrorCode::kUnavailable, git_error_text("cannot create the snapshot store " + store_dir, rc));
    }
  }
  RepoPtr store(raw);
  if (auto r = disable_pack_deltas(store.get(), store_dir); !r) return r.error();
  return store;
}

Result<std::string> snapshot_ref_name(std::string_view id) {
  bool ok = !id.empty() && id.size() <= 64 && id.front() != '.' && id.front() != '-';
  for (char c : id) ok = ok && valid_id_char(c);
  if (!ok || id.find("..") != std::string_view::npos || (id.size() >= 5 && id.substr(id.size() - 5) == ".lock")) {
    return make_error(ErrorCode::kInvalidInput,
                      "invalid snapshot id \"" + std::string(id.substr(0, 80)) +
                          "\": use 1-64 letters, digits, '.', '_' or '-', not starting with '.' or '-'");
  }
  return "refs/lockroom/snapshots/" + std::string(id);
}

Result<void> release_snapshot(git_repository* store, std::string_view id) {
  auto name = snapshot_ref_name(id);
  if (!name) return name.error();
  git_reference* raw = nullptr;
  int rc = git_reference_lookup(&raw, store, name->c_str());
  if (rc == GIT_ENOTFOUND) return {};
  ReferencePtr ref(raw);
  if (rc == 0) rc = git_reference_delete(ref.get());
  if (rc < 0) return make_error(ErrorCode::kInternal, git_error_text("cannot release snapshot " + std::string(id), rc));
  return {};
}

}  // namespace lockroom::workspace::snapshot
