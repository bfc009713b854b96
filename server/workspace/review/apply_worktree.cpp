// changes/apply to the workspace: plan every file, then write atomically (see apply_worktree.h).
#include "server/workspace/review/apply_worktree.h"

#include <optional>

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"
#include "server/workspace/review/safe_fs.h"

namespace lockroom::workspace::review {
namespace {

using Kind = HostEntry::Kind;

// What was at a host path when the apply was planned: enough to notice a change before writing,
// without keeping the content.
struct HostStamp {
  Kind kind = Kind::kMissing;
  mode_t permissions = 0;
  git_oid content{};

  static HostStamp of(const HostEntry& entry) {
    HostStamp stamp{entry.kind, entry.permissions, {}};
    git_odb_hash(&stamp.content, entry.bytes.data(), entry.bytes.size(), GIT_OBJECT_BLOB);
    return stamp;
  }
  bool operator==(const HostStamp& other) const {
    return kind == other.kind && permissions == other.permissions && oid_equal(content, other.content);
  }
};

struct Step {
  FileApplyResult result;
  enum class Op { kNone, kWrite, kChmod, kDelete } op = Op::kNone;
  std::string bytes;  // file content or symlink target to write
  bool symlink = false;
  bool executable = false;
  std::optional<mode_t> permissions;  // exact permissions for a file that exists on the host
  bool delete_old = false;            // a rename: remove old_path once path is written
  HostStamp seen_old;                 // the host at old_path when planned
  HostStamp seen_new;                 // the host at path when planned
};

bool is_symlink_mode(std::uint32_t mode) { return mode == GIT_FILEMODE_LINK; }
bool is_regular_mode(std::uint32_t mode) { return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE; }

bool host_has(const HostEntry& host, std::uint32_t mode, std::string_view bytes) {
  Kind want = is_symlink_mode(mode) ? Kind::kSymlink : Kind::kFile;
  return host.kind == want && host.bytes == bytes;
}

mode_t with_exec(mode_t permissions, bool executable) {
  return executable ? permissions | ((permissions & 0444) >> 2) : permissions & ~mode_t(0111);
}

bool is_binary(std::string_view bytes) { return git_blob_data_is_binary(bytes.data(), bytes.size()) != 0; }

class Planner {
 public:
  Planner(git_repository* store, const WorkspaceDir& workspace, const WorktreeApplyOptions& options)
      : store_(store), workspace_(workspace), options_(options) {}

  Step plan(const PlannedChange& planned) {
    const FileChange& change = planned.change;
    Step step;
    step.result.path = change.path;
    step.result.old_path = change.old_path;
    step.result.target = planned.target;
    auto refuse = [&](std::string reason) {
      step.result.status = ApplyStatus::kRefused;
      step.result.reason = std::move(reason);
      return step;
    };
    auto conflict = [&](std::string reason, std::string text = {}) {
      step.result.status = ApplyStatus::kConflict;
      step.result.reason = std::move(reason);
      step.result.conflict_text = std::move(text);
      return step;
    };
    auto unchanged = [&](std::string reason) {
      step.result.status = ApplyStatus::kUnchanged;
      step.result.reason = std::move(reason);
      return step;
    };
    for (const std::string& p : {change.path, change.old_path}) {
      if (auto problem = path_problem(p)) return refuse("refused path " + printable(p) + ": " + *problem);
    }
    bool renamed = planned.base && planned.target && change.path != change.old_path;
    std::string name = printable(change.path);

    std::string base_bytes, target_bytes;
    if (planned.base) {
      auto bytes = blob(planned.base->blob, change.old_path);
      if (!bytes) return refuse(bytes.error().message);
      base_bytes = std::move(*bytes);
    }
    if (planned.target) {
      auto bytes = blob(planned.target->blob, change.path);
      if (!bytes) return refuse(bytes.error().message);
      target_bytes = std::move(*bytes);
      if (is_symlink_mode(planned.target->mode)) {
        if (auto problem = symlink_target_problem(change.path, target_bytes)) {
          return refuse("the sandbox made " + name + " a symlink to '" + printable(target_bytes) + "': " + *problem);
        }
      } else if (!is_regular_mode(planned.target->mode)) {
        return refuse("the sandbox gave " + name + " a mode lockroom does not write");
      }
    }

    HostEntry host_old, host_new;
    if (planned.base) {
      auto host = workspace_.read(change.old_path, options_.max_file_bytes);
      if (!host) return refuse(host.error().message);
      host_old = std::move(*host);
      step.seen_old = HostStamp::of(host_old);
    }
    if (planned.target) {
      if (planned.base && !renamed) {
        host_new = host_old;
      } else {
        auto host = workspace_.read(change.path, options_.max_file_bytes);
        if (!host) return refuse(host.error().message);
        host_new = std::move(*host);
      }
      step.seen_new = HostStamp::of(host_new);
    }

    if (!planned.target) {  // a deletion
      if (host_old.kind == Kind::kMissing) return unchanged("already absent on the host");
      if (!host_has(host_old, planned.base->mode, base_bytes)) {
        return conflict("the sandbox deleted " + name + ", but it changed on the host since the snapshot");
      }
      step.op = Step::Op::kDelete;
      step.result.status = ApplyStatus::kApplied;
      return step;
    }

    if (renamed && host_old.kind == Kind::kMissing && host_has(host_new, planned.target->mode, target_bytes)) {
      return unchanged("the host already has the sandbox's version");
    }
    std::string final_bytes = target_bytes;
    ApplyStatus status = ApplyStatus::kApplied;
    bool host_kept_base = !planned.base || host_has(host_old, planned.base->mode, base_bytes);
    if (!host_kept_base) {
      const HostEntry& host = host_old;
      std::string old_name = printable(change.old_path);
      if (host.kind == Kind::kMissing) return conflict(old_name + " was deleted on the host since the snapshot");
      if (!renamed && host_has(host, planned.target->mode, target_bytes) &&
          host.executable() == (planned.target->mode == GIT_FILEMODE_BLOB_EXECUTABLE)) {
        return unchanged("the host already has the sandbox's version");
      }
      bool mergeable = host.kind == Kind::kFile && is_regular_mode(planned.base->mode) &&
                       is_regular_mode(planned.target->mode) && !is_binary(base_bytes) && !is_binary(host.bytes) &&
                       !is_binary(target_bytes);
      if (!mergeable) {
        return conflict(old_name + " changed on the host since the snapshot (it is now " + kind_name(host.kind) +
                        ") and cannot be merged");
      }
      auto merged = merge(base_bytes, host.bytes, target_bytes, change.path);
      if (!merged) return refuse(merged.error().message);
      if (!merged->first) {
        return conflict(old_name + " changed on the host and in the sandbox in overlapping places", merged->second);
      }
      final_bytes = std::move(merged->second);
      status = ApplyStatus::kMerged;
    }

    const HostEntry& destination = host_new;
    if (destination.kind == Kind::kDirectory || destination.kind == Kind::kOther) {
      return refuse("on the host " + name + " is " + kind_name(destination.kind) + "; lockroom does not replace it");
    }
    bool fresh_path = !planned.base || renamed;
    if (fresh_path && destination.kind != Kind::kMissing && !host_has(destination, planned.target->mode, final_bytes)) {
      return conflict(name + " already exists on the host with other content");
    }

    step.symlink = is_symlink_mode(planned.target->mode);
    step.executable = planned.target->mode == GIT_FILEMODE_BLOB_EXECUTABLE;
    step.delete_old = renamed;
    step.result.status = status;
    if (host_has(destination, planned.target->mode, final_bytes)) {
      if (!step.symlink && destination.executable() != step.executable) {
        step.op = Step::Op::kChmod;
        step.permissions = with_exec(destination.permissions, step.executable);
      } else if (!renamed) {
        return unchanged("the host already has the sandbox's version");
      } else if (host_kept_base) {
        step.op = Step::Op::kDelete;  // the new path already holds it: only the old one goes
      } else {
        return conflict(printable(change.old_path) + " changed on the host since the snapshot");
      }
      return step;
    }
    step.op = Step::Op::kWrite;
    step.bytes = std::move(final_bytes);
    if (destination.kind == Kind::kFile) step.permissions = with_exec(destination.permissions, step.executable);
    return step;
  }

 private:
  Result<std::string> blob(const git_oid& id, std::string_view path) {
    git_blob* raw = nullptr;
    if (int rc = git_blob_lookup(&raw, store_, &id); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot read the blob of " + printable(path), rc));
    }
    BlobPtr owned(raw);
    auto size = static_cast<std::uint64_t>(git_blob_rawsize(owned.get()));
    if (size > options_.max_file_bytes) {
      return make_error(ErrorCode::kLimitExceeded, printable(path) + " is " + std::to_string(size) +
                                                       " bytes, over the limit of " +
                                                       std::to_string(options_.max_file_bytes) + " for one file");
    }
    return std::string(static_cast<const char*>(git_blob_rawcontent(owned.get())), static_cast<std::size_t>(size));
  }

  // {clean, content}: the three-way merge of the file; content has conflict markers when not clean.
  Result<std::pair<bool, std::string>> merge(std::string_view base, std::string_view host, std::string_view sandbox,
                                             const std::string& path) {
    git_merge_file_input ancestor = GIT_MERGE_FILE_INPUT_INIT, ours = GIT_MERGE_FILE_INPUT_INIT,
                         theirs = GIT_MERGE_FILE_INPUT_INIT;
    ancestor.ptr = base.data();
    ancestor.size = base.size();
    ours.ptr = host.data();
    ours.size = host.size();
    theirs.ptr = sandbox.data();
    theirs.size = sandbox.size();
    ancestor.path = ours.path = theirs.path = path.c_str();
    git_merge_file_options options = GIT_MERGE_FILE_OPTIONS_INIT;
    options.ancestor_label = "snapshot";
    options.our_label = "host";
    options.their_label = "sandbox";
    OwnedMergeFileResult out;
    if (int rc = git_merge_file(&out.result, &ancestor, &ours, &theirs, &options); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot merge " + printable(path), rc));
    }
    return std::make_pair(out.result.automergeable != 0, std::string(out.result.ptr, out.result.len));
  }

  git_repository* store_;
  const WorkspaceDir& workspace_;
  const WorktreeApplyOptions& options_;
};

// True when the host still looks as it did when `step` was planned.
Result<bool> host_unchanged(const WorkspaceDir& workspace, const Step& step, std::uint64_t max_bytes) {
  bool renamed = step.delete_old;
  if (step.op == Step::Op::kDelete || renamed) {
    auto now = workspace.read(step.result.old_path, max_bytes);
    if (!now) return now.error();
    if (!(HostStamp::of(*now) == step.seen_old)) return false;
  }
  if (step.op == Step::Op::kWrite || step.op == Step::Op::kChmod) {
    auto now = workspace.read(step.result.path, max_bytes);
    if (!now) return now.error();
    if (!(HostStamp::of(*now) == step.seen_new)) return false;
  }
  return true;
}

void execute(const WorkspaceDir& workspace, Step& step, std::uint64_t max_bytes) {
  auto still = host_unchanged(workspace, step, max_bytes);
  if (!still || !*still) {
    step.result.status = still ? ApplyStatus::kConflict : ApplyStatus::kRefused;
    step.result.reason = still ? printable(step.result.path) + " changed on the host while lockroom was applying; it was not touched"
                               : still.error().message;
    return;
  }
  Result<void> done;
  switch (step.op) {
    case Step::Op::kDelete: done = workspace.remove(step.result.old_path); break;
    case Step::Op::kChmod: done = workspace.set_permissions(step.result.path, *step.permissions); break;
    case Step::Op::kWrite:
      done = step.symlink ? workspace.write_symlink(step.result.path, step.bytes)
                          : workspace.write_file(step.result.path, step.bytes, step.executable, step.permissions);
      break;
    case Step::Op::kNone: return;
  }
  if (!done) {
    step.result.status = ApplyStatus::kRefused;
    step.result.reason = done.error().message;
    return;
  }
  if (step.delete_old && step.op != Step::Op::kDelete) {
    if (auto removed = workspace.remove(step.result.old_path); !removed) {
      step.result.reason = "written, but the old path was not removed: " + removed.error().message;
    }
  }
}

}  // namespace

const char* apply_status_name(ApplyStatus status) {
  switch (status) {
    case ApplyStatus::kApplied: return "applied";
    case ApplyStatus::kMerged: return "merged";
    case ApplyStatus::kConflict: return "conflict";
    case ApplyStatus::kRefused: return "refused";
    case ApplyStatus::kUnchanged: return "unchanged";
  }
  return "refused";
}

Result<std::vector<FileApplyResult>> apply_worktree(git_repository* store, const git_oid& base_tree,
                                                    const git_oid& result_tree, const std::string& workspace_dir,
                                                    const Selection& selection, const WorktreeApplyOptions& options) {
  auto workspace = WorkspaceDir::open(workspace_dir);
  if (!workspace) return workspace.error();
  auto changes = Changes::compute(store, base_tree, result_tree);
  if (!changes) return changes.error();
  auto resolved = resolve_selection(*changes, selection);
  if (!resolved) return resolved.error();

  std::vector<FileApplyResult> results;
  for (const SelectionRefusal& refusal : resolved->refused) {
    FileApplyResult refused;
    refused.path = refused.old_path = refusal.path;
    refused.status = ApplyStatus::kRefused;
    refused.reason = refusal.reason;
    results.push_back(std::move(refused));
  }
  // Plan everything before the first write.
  Planner planner(store, *workspace, options);
  std::vector<Step> steps;
  for (const PlannedChange& planned : resolved->changes) steps.push_back(planner.plan(planned));
  if (options.stop_before_writing && options.stop_before_writing())
    return make_error(ErrorCode::kCancelled, "the apply was cancelled before it wrote anything");
  // Deletions first, so a file can replace a directory that the sandbox emptied.
  for (Step& step : steps) {
    if (step.op == Step::Op::kDelete) execute(*workspace, step, options.max_file_bytes);
  }
  for (Step& step : steps) {
    if (step.op != Step::Op::kDelete && step.op != Step::Op::kNone) execute(*workspace, step, options.max_file_bytes);
  }
  for (Step& step : steps) {
    ApplyStatus st = step.result.status;
    step.result.moves_base = st == ApplyStatus::kApplied || st == ApplyStatus::kMerged || st == ApplyStatus::kUnchanged;
    results.push_back(std::move(step.result));
  }
  return results;
}

}  // namespace lockroom::workspace::review
