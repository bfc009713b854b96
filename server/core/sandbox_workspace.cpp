// One sandbox's workspace: snapshot, transfer, review, apply (see sandbox_workspace.h).
#include "server/core/sandbox_workspace.h"

#include <climits>
#include <cstdlib>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "server/common/uv_work.h"
#include "server/workspace/review/blob_store.h"
#include "server/workspace/review/manifest_patch.h"
#include "server/workspace/review/result_tree.h"
#include "server/workspace/snapshot/snapshot_store.h"

namespace lockroom::core {

namespace fs = std::filesystem;
namespace snap = workspace::snapshot;
namespace review = workspace::review;
using Clock = std::chrono::steady_clock;
namespace wire = channel::wire;

namespace {

constexpr std::int64_t kMaxPackBytes = 1LL << 30;
constexpr int kRefreshAttempts = 3;  // files that change while they are fetched: list again

std::int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

Result<git_oid> parse_oid(const std::string& hex, const char* what) {
  git_oid oid{};
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstr(&oid, hex.c_str()) != 0)
    return make_error(ErrorCode::kInternal, std::string("not an object id for the ") + what + ": " + hex);
  return oid;
}

std::string oid_hex(const git_oid& oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return buf;
}

// The snapshot's commit and its tree, as object ids.
struct SnapshotIds {
  git_oid commit{}, tree{};
};
Result<SnapshotIds> ids_of(const snap::SnapshotResult& s) {
  auto commit = parse_oid(s.commit_id, "snapshot commit");
  if (!commit) return commit.error();
  auto tree = parse_oid(s.tree_id, "snapshot tree");
  if (!tree) return tree.error();
  return SnapshotIds{*commit, *tree};
}

// Where a workspace's store lives: <cache>/workspaces/<key>/store.git.
Result<std::pair<std::string, std::string>> real_path_and_store(const std::string& path, const fs::path& cache) {
  char real[PATH_MAX];
  if (!realpath(path.c_str(), real))
    return make_error(ErrorCode::kNotFound, "workspace " + path + " does not exist or cannot be read");
  if (!fs::is_directory(real)) return make_error(ErrorCode::kInvalidInput, "workspace " + path + " is not a directory");
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
    : loop_(loop), request_(std::move(request)), store_dir_(std::move(store_dir)), store_(std::move(store)), base_(std::move(base)) {}

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

// Wraps `done` so that it runs once: with the result, or with kWrongState if this object goes
// first. Returns the wrapped callback.
template <typename T>
static std::function<void(Result<T>)> once_or_abandoned(std::function<void()>& abandon,
                                                        std::function<void(Result<T>)> done, std::function<void()> finished) {
  auto state = std::make_shared<std::pair<std::function<void(Result<T>)>, std::function<void()>>>(std::move(done), std::move(finished));
  abandon = [state] {  // operations run one at a time: this replaces the finished one's
    auto d = std::move(state->first);
    if (d) d(make_error(ErrorCode::kWrongState, "the sandbox ended before its workspace operation finished"));
  };
  return [state](Result<T> r) {
    auto d = std::move(state->first);
    auto f = std::move(state->second);
    if (d) d(std::move(r));
    if (f) f();
  };
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

// --- changes out ----------------------------------------------------------------------------

void SandboxWorkspace::refresh(channel::AgentClient& agent, Done<ChangeSet> done) {
  enqueue([this, &agent, done](std::function<void()> finished) {
    do_refresh(agent, 1, once_or_abandoned<ChangeSet>(abandon_, done, finished));
  });
}

// What the guest listed, checked, and which of its entries the store lacks (worker thread).
struct SandboxWorkspace::Listing {
  channel::WorkspaceManifest listed;
  std::shared_ptr<const GuestView> previous;  // the view a partial manifest was patched onto, if any
  review::Manifest manifest;                   // the guest's whole tree now
  std::vector<review::PathChange> changed;     // against `previous` (points into `manifest`)
  std::vector<std::int64_t> wanted;                                     // agent indexes to export
  std::map<std::int64_t, std::pair<std::string, std::string>> expected;  // index -> id, path
  RefreshSteps steps;
};

namespace {
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
}  // namespace

void SandboxWorkspace::do_refresh(channel::AgentClient& agent, int attempt, Done<ChangeSet> done) {
  auto started = Clock::now();
  auto alive = alive_;
  wire::WorkspaceManifestParams params;
  params.path = kGuestPath;
  params.bounds.max_entries = static_cast<std::int64_t>(request_.limits.max_files);
  params.bounds.max_file_bytes = static_cast<std::int64_t>(request_.limits.max_file_bytes);
  params.bounds.max_total_bytes = static_cast<std::int64_t>(request_.limits.max_total_bytes) * 2;
  std::shared_ptr<const GuestView> previous = view_;
  if (previous) params.since = previous->manifest;
  git_repository* store = store_.get();
  agent.manifest(params, [this, alive, &agent, attempt, started, params, previous, store, done](Result<channel::WorkspaceManifest> listed) {
    if (!*alive) return;
    if (!listed) return done(make_error(listed.error().code, "cannot list the guest's workspace: " + listed.error().message));
    auto shared = std::make_shared<channel::WorkspaceManifest>(std::move(*listed));
    auto received = Clock::now();
    run_blocking<std::shared_ptr<Listing>>(
        loop_,
        [shared, params, previous, store, started, received]() -> Result<std::shared_ptr<Listing>> {
          auto out = std::make_shared<Listing>();
          out->listed = std::move(*shared);
          out->steps.manifest_ms = ms_between(started, received);
          out->steps.records = static_cast<std::int64_t>(out->listed.entries.size());
          out->steps.partial = out->listed.summary.since.has_value();
          std::vector<review::ManifestEntry> entries;
          entries.reserve(out->listed.entries.size());
          for (const auto& e : out->listed.entries) entries.push_back({e.path, e.mode, e.id, e.size});
          review::ManifestLimits limits;
          limits.max_entries = static_cast<std::size_t>(params.bounds.max_entries);
          limits.max_blob_bytes = static_cast<std::uint64_t>(params.bounds.max_file_bytes);
          limits.max_total_bytes = static_cast<std::uint64_t>(params.bounds.max_total_bytes);
          // AgentClient made sure a partial answer is relative to the manifest asked for.
          auto manifest = out->steps.partial && previous ? review::apply_partial_manifest(previous->files, std::move(entries), limits)
                                                         : review::validate_manifest(std::move(entries), limits);
          if (!manifest) return manifest.error();
          out->manifest = std::move(*manifest);
          if (previous) {
            out->previous = previous;
            out->changed = review::manifest_changes(previous->files, out->manifest);
          }
          // The blobs to ask for: of the changed paths only (the view's are all in the store).
          review::Manifest candidates;
          if (previous) {
            for (const auto& c : out->changed)
              if (c.now) candidates.files.push_back(*c.now);
          }
          auto missing = review::missing_blobs(store, previous ? candidates : out->manifest);
          if (!missing) return missing.error();
          // One agent index per missing blob.
          std::set<std::string> wanted;
          for (const auto& oid : *missing) wanted.insert(oid_hex(oid));
          for (std::size_t i = 0; i < out->listed.entries.size(); ++i) {
            const auto& e = out->listed.entries[i];
            if (e.mode != wire::kModeRemoved && wanted.erase(e.id)) {
              out->wanted.push_back(static_cast<std::int64_t>(i));
              out->expected[static_cast<std::int64_t>(i)] = {e.id, e.path};
            }
          }
          if (!wanted.empty())  // a blob the view claims but the store lost: list everything again
            return make_error(ErrorCode::kWrongState, "the store lacks " + std::to_string(wanted.size()) + " blob(s) the last view listed");
          out->steps.changed_paths = static_cast<std::int64_t>(out->changed.size());
          out->steps.check_ms = ms_between(received, Clock::now());
          return out;
        },
        [this, alive, &agent, attempt, started, params, previous, done](Result<std::shared_ptr<Listing>> listing) {
          if (!*alive) return;
          if (!listing && previous && attempt < kRefreshAttempts) {
            // The view could not take this answer (a store that lost a blob, a limit crossed by
            // the patch): forget it and list everything.
            spdlog::warn("workspace refresh: {}; asking the guest for a full manifest", listing.error().message);
            if (view_ == previous) view_.reset();
            return do_refresh(agent, attempt + 1, done);
          }
          if (!listing) return done(listing.error());
          fetch_and_diff(agent, attempt, started, params.bounds, std::move(*listing), done);
        });
  });
}

// Fetches the blobs the store lacks, then (worker thread) stores them, builds the result tree
// (the changed folders of the last one when there is one) and diffs it with the base.
void SandboxWorkspace::fetch_and_diff(channel::AgentClient& agent, int attempt, Clock::time_point started,
                                      const wire::WorkspaceBounds& bounds, std::shared_ptr<Listing> listing, Done<ChangeSet> done) {
  struct Fetched {
    std::vector<channel::ExportedFile> files;
    bool changed_since_listing = false;
  };
  struct Refreshed {
    ChangeSet set;
    std::shared_ptr<const GuestView> view;  // none when an entry was refused: the next refresh lists everything
  };
  auto fetched = std::make_shared<Fetched>();
  auto alive = alive_;
  git_repository* store = store_.get();
  auto base = ids_of(base_);
  if (!base) return done(base.error());
  git_oid base_tree = base->tree;
  auto fetch_started = std::make_shared<Clock::time_point>(Clock::now());
  auto diff = [this, alive, listing, fetched, store, base_tree, started, fetch_started, done]() {
    run_blocking<Refreshed>(
        loop_,
        [listing, fetched, store, base_tree, started, fetch_started]() -> Result<Refreshed> {
          ChangeSet set;
          set.steps = listing->steps;
          for (const auto& file : fetched->files) {
            const auto& expected = listing->expected.at(file.entry);
            auto oid = parse_oid(expected.first, "exported file");
            if (!oid) return oid.error();
            auto stored = review::store_blob(store, *oid, file.content, expected.second);
            if (!stored) return stored.error();
            set.blobs_fetched++;
            set.bytes_fetched += file.content.size();
          }
          auto tree_started = Clock::now();
          set.steps.fetch_ms = ms_between(*fetch_started, tree_started);
          Result<git_oid> tree = make_error(ErrorCode::kInternal, "no result tree");
          if (listing->previous) {
            tree = review::update_result_tree(store, listing->previous->tree, listing->changed);
            if (!tree && tree.error().code == ErrorCode::kInternal) {
              spdlog::warn("workspace refresh: {}; building the result tree from scratch", tree.error().message);
              tree = review::build_result_tree(store, listing->manifest);
            }
          } else {
            tree = review::build_result_tree(store, listing->manifest);
          }
          if (!tree) return tree.error();
          auto compute_started = Clock::now();
          set.steps.tree_ms = ms_between(tree_started, compute_started);
          auto changes = review::Changes::compute(store, base_tree, *tree);
          if (!changes) return changes.error();
          set.steps.compute_ms = ms_between(compute_started, Clock::now());
          set.changes = std::make_shared<review::Changes>(std::move(*changes));
          set.refused = listing->manifest.refused;
          set.refresh_ms = ms_since(started);
          Refreshed out{std::move(set), nullptr};
          if (out.set.refused.empty()) {
            auto view = std::make_shared<GuestView>();
            view->manifest = listing->listed.summary.manifest;
            view->files = std::move(listing->manifest);
            listing->changed.clear();  // pointed into the manifest just moved
            view->tree = *tree;
            out.view = std::move(view);
          }
          return out;
        },
        [this, alive, done](Result<Refreshed> refreshed) {
          if (!*alive) return;
          if (!refreshed) return done(refreshed.error());
          ChangeSet& set = refreshed->set;
          if (!set.refused.empty())
            spdlog::warn("the guest's manifest had {} entries lockroom refused (first: {}: {})", set.refused.size(),
                         set.refused.front().path, set.refused.front().reason);
          view_ = std::move(refreshed->view);
          reviewed_ = set;
          done(std::move(set));
        });
  };
  if (listing->wanted.empty()) return diff();

  wire::WorkspaceExportParams ex;
  ex.path = kGuestPath;
  ex.manifest = listing->listed.summary.manifest;
  ex.entries = listing->wanted;
  ex.bounds = bounds;
  agent.export_files(
      ex,
      [listing, fetched](channel::ExportedFile file) {
        auto it = listing->expected.find(file.entry);
        if (it == listing->expected.end()) return;  // AgentClient checks order and count
        if (file.id != it->second.first) {
          fetched->changed_since_listing = true;  // written after the listing: list again
          return;
        }
        fetched->files.push_back(std::move(file));
      },
      [this, alive, &agent, attempt, fetched, diff, done](Result<std::int64_t> r) {
        if (!*alive) return;
        if (!r) return done(make_error(r.error().code, "cannot fetch the guest's files: " + r.error().message));
        if (fetched->changed_since_listing) {
          if (attempt < kRefreshAttempts) return do_refresh(agent, attempt + 1, done);
          return done(make_error(ErrorCode::kUnavailable,
                                 "files in the sandbox kept changing while lockroom read them; try again when its processes are quieter"));
        }
        diff();
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
  with_review<std::vector<review::FileApplyResult>>(
      agent,
      [selection, dir](const ChangeSet& set) {
        const auto& c = *set.changes;
        return review::apply_worktree(c.store(), c.base_tree(), c.result_tree(), dir, selection);
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
      // (ignored ones, such as build output, stay).
      return run_git(agent, "git reset -q --hard \"$0\" && git clean -fdq", {base}, [this, alive, reply](Result<void> r) {
        if (!*alive) return;
        reviewed_.reset();
        if (!r) return reply(r.error());
        reply(std::size_t{0});
      });
    }
    // Chosen paths: each back to its base version, or removed when the base has none. A rename
    // is undone as a whole (its old path is restored too).
    auto ids = ids_of(base_);
    if (!ids) return reply(ids.error());
    workspace::TreePtr tree;
    {
      git_tree* t = nullptr;
      if (git_tree_lookup(&t, store_.get(), &ids->tree) != 0) return reply(make_error(ErrorCode::kInternal, workspace::git_error_text("base tree", -1)));
      tree.reset(t);
    }
    std::set<std::string> touched(paths->begin(), paths->end());
    if (reviewed_)
      for (const auto& p : *paths)
        if (const auto* change = reviewed_->changes->find(p)) {
          touched.insert(change->path);
          touched.insert(change->old_path);
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
    std::size_t count = touched.size();
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
