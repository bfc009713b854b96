// One sandbox's workspace: snapshot, transfer, sync, apply, discard (see sandbox_workspace.h;
// refresh, the changes out, is sandbox_workspace_refresh.cpp).
#include "server/core/sandbox_workspace.h"

#include <climits>
#include <cstdlib>
#include <set>

#include <spdlog/spdlog.h>

#include "server/common/uv_work.h"
#include "server/core/sandbox_workspace_parts.h"
#include "server/workspace/snapshot/snapshot_store.h"

namespace lockroom::core {

namespace fs = std::filesystem;
namespace snap = workspace::snapshot;
namespace review = workspace::review;
namespace wire = channel::wire;
using namespace workspace_parts;

namespace {

constexpr std::int64_t kMaxPackBytes = 1LL << 30;

// Where a workspace's store lives: <cache>/workspaces/<key>/store.git.
Result<std::pair<std::string, std::string>> real_path_and_store(const std::string& path, const fs::path& cache) {
  char real[PATH_MAX];
  if (!realpath(path.c_str(), real))
    return make_error(ErrorCode::kNotFound, "workspace " + path + " does not exist or cannot be read");
  if (!fs::is_directory(real)) return make_field_error("workspace", "workspace " + path + " is not a directory");
  std::string store = (cache / "workspaces" / snap::workspace_store_key(real) / "store.git").string();
  return std::make_pair(std::string(real), store);
}

// The snapshot taken for `request`, and its store opened (worker thread).
struct Snapshotted {
  std::string real_path, store_dir;
  workspace::RepoPtr store;
  snap::SnapshotResult result;
};
Result<Snapshotted> take(const WorkspaceRequest& request, const fs::path& cache) {
  auto where = real_path_and_store(request.path, cache);
  if (!where) return where.error();
  snap::SnapshotOptions options;
  options.secrets = request.secrets;
  options.limits = request.limits;
  auto result = snap::take_snapshot(where->first, where->second, options);
  if (!result) return result.error();
  auto store = snap::open_store(where->second);
  if (!store) return store.error();
  return Snapshotted{where->first, where->second, std::move(*store), std::move(*result)};
}

}  // namespace

// --- construction and the operation queue ---------------------------------------------------

void SandboxWorkspace::snapshot(uv_loop_t* loop, fs::path cache_dir, WorkspaceRequest request,
                                Done<std::unique_ptr<SandboxWorkspace>> done) {
  auto shared_request = std::make_shared<WorkspaceRequest>(std::move(request));
  run_blocking<Snapshotted>(
      loop, [shared_request, cache_dir] { return take(*shared_request, cache_dir); },
      [loop, shared_request, done](Result<Snapshotted> taken) {
        if (!taken) return done(taken.error());
        WorkspaceRequest req = *shared_request;
        req.path = taken->real_path;
        done(std::unique_ptr<SandboxWorkspace>(
            new SandboxWorkspace(loop, std::move(req), taken->store_dir, std::move(taken->store), std::move(taken->result))));
      });
}

SandboxWorkspace::SandboxWorkspace(uv_loop_t* loop, WorkspaceRequest request, std::string store_dir, workspace::RepoPtr store,
                                   snap::SnapshotResult base)
    : loop_(loop), request_(std::move(request)), store_dir_(std::move(store_dir)), store_(std::move(store)), base_(std::move(base)) {
  auto objects = review::ReviewObjects::attach(store_.get(), kReviewObjectsBudget);
  if (objects) review_objects_ = *objects;
  else spdlog::warn("reviews of {} write their objects to disk: {}", request_.path, objects.error().message);
}

SandboxWorkspace::~SandboxWorkspace() {
  *alive_ = false;
  auto abandon = std::move(abandon_);
  if (abandon) abandon();
}

void SandboxWorkspace::enqueue(std::function<void(std::function<void()>)> op) {
  queue_.push_back(std::move(op));
  if (running_) return;
  auto alive = alive_;
  auto next = std::make_shared<std::function<void()>>();
  *next = [this, alive, next] {
    if (!*alive) return;
    if (queue_.empty()) {
      running_ = false;
      return;
    }
    running_ = true;
    auto op = std::move(queue_.front());
    queue_.pop_front();
    op([alive, next] {
      if (*alive) (*next)();
    });
  };
  (*next)();
}


// --- snapshot in ----------------------------------------------------------------------------

void SandboxWorkspace::import(channel::AgentClient& agent, Done<WorkspaceTransfer> done) {
  enqueue([this, &agent, done](std::function<void()> finished) {
    send_snapshot(agent, base_, std::nullopt, once_or_abandoned<WorkspaceTransfer>(abandon_, done, finished));
  });
}

void SandboxWorkspace::import_over(channel::AgentClient& agent, std::string commit, std::string branch, Done<WorkspaceTransfer> done) {
  enqueue([this, &agent, commit, branch, done](std::function<void()> finished) {
    auto reply = once_or_abandoned<WorkspaceTransfer>(abandon_, done, finished);
    git_repository* store = store_.get();
    auto alive = alive_;
    // Everything reachable from the template's commit is in the guest already. A store that
    // lost that commit sends everything: the guest still has the commit to move from.
    run_blocking<snap::OidSet>(
        loop_,
        [store, commit]() -> Result<snap::OidSet> {
          auto oid = parse_oid(commit, "workspace template's commit");
          if (!oid) return oid.error();
          auto all = snap::objects_to_send(store, *oid, {});
          if (!all) return all.error();
          return snap::OidSet(all->begin(), all->end());
        },
        [this, alive, &agent, commit, branch, reply](Result<snap::OidSet> has) {
          if (!*alive) return;
          if (has) guest_has_ = std::move(*has);
          else spdlog::warn("the workspace store lacks the template's commit {} ({}); sending everything", commit, has.error().message);
          bool same_branch = base_.branch.value_or(wire::kDefaultBranch) == branch;
          send_snapshot(agent, base_, same_branch ? std::optional<std::string>(commit) : std::nullopt, reply);
        });
  });
}

void SandboxWorkspace::send_snapshot(channel::AgentClient& agent, const snap::SnapshotResult& snapshot,
                                     std::optional<std::string> base_commit, Done<WorkspaceTransfer> done) {
  auto ids = ids_of(snapshot);
  if (!ids) return done(ids.error());
  struct Packed {
    std::vector<std::string> packs;
    std::uint64_t bytes = 0;
    std::vector<git_oid> objects;
    std::int64_t ms = 0;
  };
  git_repository* store = store_.get();
  auto has = std::make_shared<snap::OidSet>(guest_has_);
  git_oid commit = ids->commit;
  auto alive = alive_;
  run_blocking<Packed>(
      loop_,
      [store, has, commit]() -> Result<Packed> {
        auto started = Clock::now();
        auto objects = snap::objects_to_send(store, commit, *has);
        if (!objects) return objects.error();
        Packed packed;
        packed.objects = std::move(*objects);
        if (packed.objects.empty()) return packed;
        auto collect = [&](std::string& into) {
          return [&](std::string_view bytes) -> Result<void> {
            if (packed.bytes + bytes.size() > static_cast<std::uint64_t>(kMaxPackBytes))
              return make_error(ErrorCode::kLimitExceeded, "the workspace packs are larger than 1 GiB");
            into.append(bytes);
            packed.bytes += bytes.size();
            return {};
          };
        };
        // Packs of the store that hold only wanted objects go as they are; the rest is packed.
        auto plan = snap::plan_packs(store, packed.objects);
        if (!plan) return plan.error();
        for (const auto& store_pack : plan->store_packs) {
          packed.packs.emplace_back();
          auto sent = snap::send_store_pack(store_pack, collect(packed.packs.back()));
          if (!sent) return sent.error();
        }
        if (!plan->rest.empty()) {
          packed.packs.emplace_back();
          auto info = snap::write_pack(store, plan->rest, collect(packed.packs.back()));
          if (!info) return info.error();
        }
        packed.ms = ms_since(started);
        return packed;
      },
      [this, alive, &agent, snapshot, base_commit, done](Result<Packed> packed) {
        if (!*alive) return;
        if (!packed) return done(make_error(packed.error().code, "cannot pack the workspace: " + packed.error().message));
        WorkspaceTransfer transfer;
        transfer.objects = packed->objects.size();
        transfer.pack_bytes = packed->bytes;
        transfer.pack_ms = packed->ms;
        wire::WorkspaceCheckoutParams checkout;
        checkout.path = kGuestPath;
        checkout.commit = snapshot.commit_id;
        checkout.base = base_commit;
        checkout.branch = base_.branch.value_or(wire::kDefaultBranch);
        checkout.exclude = snapshot.guest_excludes;  // what the host ignores, so the guest's git does too
        auto sent = std::make_shared<std::vector<git_oid>>(std::move(packed->objects));
        auto started = Clock::now();
        agent.import_workspace(checkout, std::move(packed->packs), kMaxPackBytes,
                               [this, alive, sent, transfer, started, done](Result<wire::WorkspaceCheckoutResult> r) mutable {
                                 if (!*alive) return;
                                 if (!r) return done(r.error());
                                 guest_has_.insert(sent->begin(), sent->end());
                                 transfer.import_ms = ms_since(started);
                                 done(transfer);
                               });
      });
}

void SandboxWorkspace::sync(channel::AgentClient& agent, Done<WorkspaceTransfer> done) {
  enqueue([this, &agent, done](std::function<void()> finished) {
    auto reply = once_or_abandoned<WorkspaceTransfer>(abandon_, done, finished);
    auto request = std::make_shared<WorkspaceRequest>(request_);
    fs::path cache = fs::path(store_dir_).parent_path().parent_path().parent_path();
    auto alive = alive_;
    run_blocking<Snapshotted>(
        loop_, [request, cache] { return take(*request, cache); },
        [this, alive, &agent, reply](Result<Snapshotted> taken) {
          if (!*alive) return;
          if (!taken) return reply(taken.error());
          auto next = std::make_shared<snap::SnapshotResult>(std::move(taken->result));
          send_snapshot(agent, *next, base_.commit_id, [this, alive, next, reply](Result<WorkspaceTransfer> t) {
            if (!*alive) return;
            if (t) {
              base_ = std::move(*next);
              reviewed_.reset();  // the base moved: the next review starts from it
            }
            reply(std::move(t));
          });
        });
  });
}


template <typename T>
void SandboxWorkspace::with_review(channel::AgentClient& agent, std::function<Result<T>(const ChangeSet&)> act, Done<T> done) {
  enqueue([this, &agent, act, done](std::function<void()> finished) {
    auto reply = once_or_abandoned<T>(abandon_, done, finished);
    auto alive = alive_;
    auto run = [this, alive, act, reply](const ChangeSet& set) {
      auto shared = std::make_shared<ChangeSet>(set);
      run_blocking<T>(loop_, [act, shared] { return act(*shared); }, [alive, reply](Result<T> r) {
        if (*alive) reply(std::move(r));
      });
    };
    if (reviewed_) return run(*reviewed_);
    do_refresh(agent, 1, [run, reply](Result<ChangeSet> set) {
      if (!set) return reply(set.error());
      run(*set);
    });
  });
}

void SandboxWorkspace::apply_worktree(channel::AgentClient& agent, review::Selection selection,
                                      Done<std::vector<review::FileApplyResult>> done) {
  std::string dir = request_.path;
  review::WorktreeApplyOptions options;
  options.max_file_bytes = request_.limits.max_file_bytes;
  with_review<std::vector<review::FileApplyResult>>(
      agent,
      [selection, dir, options](const ChangeSet& set) {
        const auto& c = *set.changes;
        return review::apply_worktree(c.store(), c.base_tree(), c.result_tree(), dir, selection, options);
      },
      std::move(done));
}

void SandboxWorkspace::apply_branch(channel::AgentClient& agent, review::Selection selection, BranchApply branch,
                                    Done<review::BranchOutcome> done) {
  if (!base_.is_git_repo)
    return done(make_error(ErrorCode::kWrongState, "the workspace " + request_.path + " is not a git repository: apply to the worktree instead"));
  if (!base_.repo_prefix.empty())
    return done(make_error(ErrorCode::kWrongState, "the workspace is the folder " + base_.repo_prefix +
                                                       " inside its repository; branch mode needs the repository's top folder"));
  review::BranchRequest request;
  request.repo_path = request_.path;
  if (base_.user_head) {
    auto head = parse_oid(*base_.user_head, "user's HEAD");
    if (!head) return done(head.error());
    request.head_at_snapshot = *head;
  }
  request.name = branch.name;
  request.force = branch.force;
  with_review<review::BranchOutcome>(
      agent,
      [selection, request](const ChangeSet& set) {
        const auto& c = *set.changes;
        return review::apply_branch(c.store(), c.base_tree(), c.result_tree(), selection, request);
      },
      std::move(done));
}

// --- discard ----------------------------------------------------------------------------------

void SandboxWorkspace::discard(channel::AgentClient& agent, std::optional<std::vector<std::string>> paths, Done<std::size_t> done) {
  enqueue([this, &agent, paths, done](std::function<void()> finished) {
    auto reply = once_or_abandoned<std::size_t>(abandon_, done, finished);
    auto alive = alive_;
    std::string base = base_.commit_id;
    if (!paths) {
      // Everything: the branch, index and worktree back to the snapshot; untracked files go
      // (ignored ones, such as build output, stay). The count is of the changes the last review
      // saw, or a fresh one when there is none.
      auto reset_all = [this, alive, &agent, base, reply](std::size_t count) {
        run_git(agent, "git reset -q --hard \"$0\" && git clean -fdq", {base}, [this, alive, count, reply](Result<void> r) {
          if (!*alive) return;
          reviewed_.reset();
          if (!r) return reply(r.error());
          reply(count);
        });
      };
      if (reviewed_) return reset_all(reviewed_->changes->list().size());
      return do_refresh(agent, 1, [alive, reset_all](Result<ChangeSet> set) {
        if (*alive) reset_all(set ? set->changes->list().size() : 0);
      });
    }
    // Chosen paths: each back to its base version, or removed when the base has none. A rename
    // is undone as a whole (its old path is restored too).
    auto ids = ids_of(base_);
    if (!ids) return reply(ids.error());
    workspace::TreePtr tree;
    {
      git_tree* t = nullptr;
      if (int rc = git_tree_lookup(&t, store_.get(), &ids->tree); rc != 0)
        return reply(make_error(ErrorCode::kInternal, workspace::git_error_text("the base tree " + base + " is not in lockroom's store", rc)));
      tree.reset(t);
    }
    std::set<std::string> touched(paths->begin(), paths->end());
    std::set<std::string> changes;  // each change named once (a rename by either of its paths)
    if (reviewed_) {
      for (const auto& p : *paths) {
        if (const auto* change = reviewed_->changes->find(p)) {
          touched.insert(change->path);
          touched.insert(change->old_path);
          changes.insert(change->path);
        } else {
          changes.insert(p);
        }
      }
    }
    std::vector<std::string> restore{base}, remove;
    for (const auto& p : touched) {
      if (p.empty()) continue;
      git_tree_entry* entry = nullptr;
      if (git_tree_entry_bypath(&entry, tree.get(), p.c_str()) == 0) {
        git_tree_entry_free(entry);
        restore.push_back(p);
      } else {
        remove.push_back(p);
      }
    }
    std::size_t count = reviewed_ ? changes.size() : paths->size();
    std::string script = "set -e; b=\"$0\"; n=$1; shift; i=0; for p; do i=$((i+1)); "
                         "if [ $i -le $n ]; then git checkout -q \"$b\" -- \"$p\"; else rm -rf -- \"$p\"; fi; done";
    std::vector<std::string> args{base, std::to_string(restore.size() - 1)};
    args.insert(args.end(), restore.begin() + 1, restore.end());
    args.insert(args.end(), remove.begin(), remove.end());
    run_git(agent, script, args, [this, alive, count, reply](Result<void> r) {
      if (!*alive) return;
      reviewed_.reset();
      if (!r) return reply(r.error());
      reply(count);
    });
  });
}

// Runs `sh -c script args...` in the guest's workspace; fails with its stderr unless it exits 0.
void SandboxWorkspace::run_git(channel::AgentClient& agent, std::string script, std::vector<std::string> args, Done<void> done) {
  wire::ProcessStartParams params;
  params.argv = {"sh", "-c", std::move(script)};
  params.argv.insert(params.argv.end(), args.begin(), args.end());
  params.cwd = kGuestPath;
  auto err = std::make_shared<std::string>();
  auto reported = std::make_shared<bool>(false);
  channel::ProcessEvents events;
  events.on_output = [err](channel::OutputKind, std::string_view bytes) {
    if (err->size() < 4096) err->append(bytes.substr(0, 4096 - err->size()));
  };
  events.on_exit = [err, reported, done](const wire::ProcessExited& exited) {
    if (std::exchange(*reported, true)) return;
    if (exited.exit_code && *exited.exit_code == 0) return done({});
    done(make_error(ErrorCode::kUnavailable, "git in the sandbox failed: " + (err->empty() ? std::string("no output") : *err)));
  };
  agent.start_process(params, std::move(events), [reported, done](Result<wire::ProcessStartResult> r) {
    if (!r && !std::exchange(*reported, true)) done(r.error());
  });
}

}  // namespace lockroom::core
