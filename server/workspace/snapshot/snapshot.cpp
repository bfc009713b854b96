// take_snapshot(): scan, check, store, commit, pin (see snapshot.h).
#include "server/workspace/snapshot/snapshot.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>

#include "server/workspace/git_util.h"
#include "server/workspace/snapshot/object_writer.h"
#include "server/workspace/snapshot/snapshot_store.h"
#include "server/workspace/snapshot/stat_cache.h"
#include "server/workspace/snapshot/store_use.h"

namespace lockroom::workspace::snapshot {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t ms_since(Clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

std::string hex(const git_oid& id) {
  char text[GIT_OID_HEXSZ + 1];
  git_oid_tostr(text, sizeof text, &id);
  return text;
}

Result<std::string> real_directory(const std::string& dir, const char* what) {
  char* resolved = realpath(dir.c_str(), nullptr);
  if (!resolved) return make_error(ErrorCode::kNotFound, std::string(what) + " " + dir + " does not exist");
  std::string out = resolved;
  std::free(resolved);
  struct stat st {};
  if (stat(out.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return make_error(ErrorCode::kInvalidInput, std::string(what) + " " + dir + " is not a directory");
  }
  return out;
}

Result<git_oid> commit_tree(git_repository* store, const git_oid& tree_id) {
  git_signature* raw_sig = nullptr;
  if (int rc = git_signature_new(&raw_sig, "lockroom", "lockroom@localhost", 0, 0); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot make the snapshot signature", rc));
  }
  SignaturePtr sig(raw_sig);
  git_tree* raw_tree = nullptr;
  if (int rc = git_tree_lookup(&raw_tree, store, &tree_id); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot read back the snapshot tree", rc));
  }
  TreePtr tree(raw_tree);
  git_oid commit;
  if (int rc = git_commit_create(&commit, store, nullptr, sig.get(), sig.get(), nullptr,
                                 "lockroom workspace snapshot\n", tree.get(), 0, nullptr);
      rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot write the snapshot commit", rc));
  }
  return commit;
}

Result<void> pin(git_repository* store, const std::string& ref_name, const git_oid& commit) {
  git_reference* raw = nullptr;
  if (int rc = git_reference_create(&raw, store, ref_name.c_str(), &commit, 1, "lockroom snapshot"); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot pin the snapshot as " + ref_name, rc));
  }
  git_reference_free(raw);
  return {};
}

// Puts every selected file into the store (or takes its blob from the stat cache) and records it
// for the tree. Files that vanished since the scan are listed as skipped.
Result<void> store_files(const std::string& workspace, ScanResult& scan, const SnapshotLimits& limits,
                         ObjectWriter& writer, StatCache& cache, SnapshotResult& result) {
  for (const auto& entry : scan.entries) {
    git_oid id;
    struct stat st = entry.stat;
    if (auto cached = cache.lookup(entry, writer.odb())) {
      id = *cached;
    } else {
      auto stored = writer.store_entry(workspace + "/" + entry.path, entry.kind, limits.max_file_bytes);
      if (!stored && stored.error().code == ErrorCode::kNotFound) {
        scan.skipped.push_back({entry.path, "disappeared during the snapshot"});
        continue;
      }
      if (!stored) return stored.error();
      id = stored->id;
      st = stored->stat;
      ++result.files_read;
    }
    if (auto added = cache.add(entry.path, entry.kind, id, st); !added) {
      scan.skipped.push_back({entry.path, added.error().message});
      continue;
    }
    ++result.file_count;
    result.total_bytes += static_cast<std::uint64_t>(st.st_size);
  }
  if (result.total_bytes > limits.max_total_bytes) {
    return make_error(ErrorCode::kLimitExceeded,
                      "the workspace's files grew to " + human_bytes(result.total_bytes) +
                          " during the snapshot, more than the " + human_bytes(limits.max_total_bytes) +
                          " limit. Add large files to .gitignore or raise the limit.");
  }
  return {};
}

}  // namespace

Result<SnapshotResult> take_snapshot(const std::string& workspace_dir, const std::string& store_dir,
                                     const SnapshotOptions& options) {
  ensure_libgit2();
  const auto scan_start = Clock::now();
  timespec scan_wall{};
  clock_gettime(CLOCK_REALTIME, &scan_wall);

  auto workspace = real_directory(workspace_dir, "the workspace");
  if (!workspace) return workspace.error();
  auto secrets = SecretFilter::compile(options.secrets);
  if (!secrets) return secrets.error();
  if (!options.snapshot_id.empty()) {
    if (auto name = snapshot_ref_name(options.snapshot_id); !name) return name.error();
  }
  auto store = open_store(store_dir);
  if (!store) return store.error();
  auto store_real = real_directory(store_dir, "the snapshot store");
  if (!store_real) return store_real.error();
  // Which folder the store is of, for `lockroom workspace ls|prune`. Best effort: a store without
  // it is still listed and pruned by age.
  (void)record_store_workspace(*store_real, *workspace);

  auto scan = scan_workspace(*workspace, *store_real, *secrets, options.limits.max_files);
  if (!scan) return scan.error();
  {
    std::vector<SizedPath> sizes;
    sizes.reserve(scan->entries.size());
    for (const auto& e : scan->entries) sizes.push_back({e.path, e.size});
    if (auto fits = check_limits(sizes, options.limits, scan->stopped_early); !fits) return fits.error();
  }

  SnapshotResult result;
  result.timings.scan_ms = ms_since(scan_start);
  const auto store_start = Clock::now();

  auto writer = ObjectWriter::attach(store->get(), *store_real);
  if (!writer) return writer.error();
  auto cache = StatCache::open(*store_real, scan_wall);
  if (!cache) return cache.error();
  if (auto stored = store_files(*workspace, *scan, options.limits, *writer, *cache, result); !stored) {
    return stored.error();
  }

  auto tree = cache->write_tree(store->get());
  if (!tree) return tree.error();
  auto commit = commit_tree(store->get(), *tree);
  if (!commit) return commit.error();
  if (auto flushed = writer->flush(&*commit); !flushed) return flushed.error();
  result.commit_id = hex(*commit);
  result.tree_id = hex(*tree);
  result.snapshot_id = options.snapshot_id.empty() ? result.commit_id : options.snapshot_id;
  auto ref_name = snapshot_ref_name(result.snapshot_id);
  if (!ref_name) return ref_name.error();
  if (auto pinned = pin(store->get(), *ref_name, *commit); !pinned) return pinned.error();
  cache->save();

  result.user_head = std::move(scan->git.head_commit);
  result.branch = std::move(scan->git.branch);
  result.is_git_repo = scan->git.is_git_repo;
  result.repo_prefix = std::move(scan->git.prefix);
  result.guest_excludes = std::move(scan->git.guest_excludes);
  result.withheld = std::move(scan->withheld);
  result.skipped = std::move(scan->skipped);
  std::sort(result.skipped.begin(), result.skipped.end(),
            [](const SkippedEntry& a, const SkippedEntry& b) { return a.path < b.path; });
  result.timings.store_ms = ms_since(store_start);
  return result;
}

}  // namespace lockroom::workspace::snapshot
