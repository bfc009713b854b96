// SandboxWorkspace: one sandbox's copy of a host workspace — snapshot in, changes out, apply.
//
// Made by snapshotting the host directory into lockroom's private store for it
// (<cache>/workspaces/<key>/store.git, server/workspace/snapshot) on a worker thread. import()
// sends the guest only the objects it lacks as a git pack and checks the snapshot out at
// /workspace. refresh() asks the agent for its manifest (after the first, only what changed since
// the last one: a partial manifest patched onto the view kept here, carrying the changed files'
// content inline), fetches only the blobs the store still lacks with workspace.export (each blob
// checked against its id either way: the guest is hostile), rewrites the changed folders
// of the result tree and diffs it with the review's base (server/workspace/review). Each refresh
// is kept as a view with an id (the 8 most recently made or used, so an editor's and a terminal's
// views do not replace each other); apply_worktree()/apply_branch() act on the view the caller
// names, byte for byte, and nothing reaches the host workspace any other way. A worktree apply
// moves the review's base for the files it wrote (review_base.h); a view whose base moved under a
// file is refused for that file, and sync/discard drop every view. sync() snapshots the host
// again and brings its edits into the guest, which then becomes the new base.
//
// Operations run one at a time, in order. When the object goes (its sandbox ended) a pending
// operation fails with kWrongState. The mutating ones (apply, discard, sync) take a StopSignal:
// stopped while queued or before their first write they do nothing and fail with kCancelled;
// once writing began they finish. Loop thread only; blocking work runs on libuv's pool.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <uv.h>

#include "server/channel/agent_client.h"
#include "server/common/result.h"
#include "server/core/sandbox_events.h"
#include "server/workspace/review/apply_branch.h"
#include "server/workspace/review/apply_worktree.h"
#include "server/workspace/review/changes.h"
#include "server/workspace/review/manifest.h"
#include "server/workspace/review/review_base.h"
#include "server/workspace/review/review_objects.h"
#include "server/workspace/snapshot/snapshot.h"
#include "server/workspace/snapshot/transfer.h"

namespace lockroom::core {

struct WorkspaceRequest {
  std::string path;  // the host directory
  workspace::snapshot::SecretPolicy secrets;
  workspace::snapshot::SnapshotLimits limits;
};

struct WorkspaceTransfer {
  std::uint64_t objects = 0;
  std::uint64_t pack_bytes = 0;
  std::int64_t pack_ms = 0;
  std::int64_t import_ms = 0;  // send + index-pack + checkout in the guest
};

// Where a refresh's time went (for benchmarks and logs), in ms.
struct RefreshSteps {
  bool partial = false;        // the agent sent only what changed since the last refresh
  std::int64_t records = 0;    // manifest records received
  std::int64_t changed_paths = 0;
  std::int64_t inlined = 0;    // blobs stored from the manifest's inline content
  std::int64_t exported = 0;   // blobs fetched with workspace.export (what was not inlined)
  double manifest_ms = 0;      // the agent's manifest, received and decoded (inline content and its ids checked)
  double agent_ms = 0;         // of which the agent making it, as it reports (ms granularity)
  double check_ms = 0;         // validated (or patched onto the last view), missing blobs found
  double store_inlined_ms = 0; // the inline content stored
  double fetch_ms = 0;         // workspace.export of the blobs still missing, and storing them (0: no export)
  double tree_ms = 0;          // the result tree
  double compute_ms = 0;       // Changes::compute
};

// What the review works on: the changes between the base and the guest's tree at one moment.
struct ChangeSet {
  std::shared_ptr<workspace::review::Changes> changes;
  std::vector<workspace::review::EntryRefusal> refused;  // manifest entries refused (a misbehaving guest)
  std::uint64_t blobs_fetched = 0;  // blobs taken from the guest, inline or exported
  std::uint64_t bytes_fetched = 0;
  std::uint64_t blobs_inlined = 0;  // of which came inline with the manifest
  std::uint64_t bytes_inlined = 0;
  std::int64_t refresh_ms = 0;
  RefreshSteps steps;
  std::string view_id;  // the view this set is kept as (opaque; changes/* name it)
};

// Lets the caller of a mutating operation stop it (see the class comment). Loop thread.
class StopSignal {
 public:
  // Stops the operation: at once when it is still queued (its `done` gets kCancelled now), else
  // at its next point before the first write.
  void request();
  bool requested() const { return flag_->load(); }
  std::shared_ptr<std::atomic<bool>> flag() const { return flag_; }

 private:
  friend class SandboxWorkspace;
  std::shared_ptr<std::atomic<bool>> flag_ = std::make_shared<std::atomic<bool>>(false);
  std::function<void()> while_queued_;
};
using Stop = std::shared_ptr<StopSignal>;
// Progress messages of a long operation ("listing the guest's files", ...).
using Steps = std::function<void(const std::string&)>;

struct BranchApply {
  std::string name;  // the branch is lockroom/<name>
  bool force = false;
};

class SandboxWorkspace {
 public:
  template <typename T>
  using Done = std::function<void(Result<T>)>;

  // Snapshots `request.path` on a worker thread (blocking I/O), store under `cache_dir`.
  static void snapshot(uv_loop_t* loop, std::filesystem::path cache_dir, WorkspaceRequest request,
                       Done<std::unique_ptr<SandboxWorkspace>> done);
  ~SandboxWorkspace();
  SandboxWorkspace(const SandboxWorkspace&) = delete;
  SandboxWorkspace& operator=(const SandboxWorkspace&) = delete;

  // The snapshot the guest's workspace is based on (after sync(): the latest).
  const workspace::snapshot::SnapshotResult& base() const { return base_; }
  const std::string& host_path() const { return request_.path; }
  // What it was made from (the path resolved to the real one).
  const WorkspaceRequest& request() const { return request_; }
  static constexpr const char* kGuestPath = "/workspace";

  // Brings the base into the guest at /workspace (only the objects it lacks).
  void import(channel::AgentClient& agent, Done<WorkspaceTransfer> done);
  // The same for a guest restored from a workspace template whose /workspace holds the clean
  // checkout of `commit` on `branch` (and every object of it): only what changed since is sent,
  // and the checkout moves from there (a branch switch when the branch differs).
  void import_over(channel::AgentClient& agent, std::string commit, std::string branch, Done<WorkspaceTransfer> done);
  // A fresh view of the guest's changes (also while its processes run), kept under its view_id.
  // Stopped while still queued, it never looks at the guest (`done` gets kCancelled); once
  // running it finishes.
  void refresh(channel::AgentClient& agent, Done<ChangeSet> done, Steps steps = {}, Stop stop = nullptr);
  // The view `id`, marked as used; kWrongState when it is no longer kept.
  Result<ChangeSet> view(const std::string& id);
  // The last view refresh() made, if it is still kept and the base did not move since.
  std::optional<ChangeSet> latest();
  static constexpr std::size_t kMaxViews = 8;
  // Past this many bytes of kept patches between them, older views go too (the newest stays).
  static constexpr std::uint64_t kMaxViewsBytes = std::uint64_t(256) << 20;
  std::size_t views_kept() const { return views_.size(); }
  // Writes the selected changes of the view `view_id` into the host workspace, three-way merging
  // files the user changed meanwhile, and moves the review's base for the files written. A file
  // whose base moved since that view is refused (reason: changed since you reviewed it).
  void apply_worktree(channel::AgentClient& agent, std::string view_id, workspace::review::Selection selection, Stop stop,
                      Done<std::vector<workspace::review::FileApplyResult>> done);
  // Commits the selected changes of the view `view_id` to lockroom/<name> in the user's
  // repository; their checkout, index and HEAD are untouched. The base does not move.
  void apply_branch(channel::AgentClient& agent, std::string view_id, workspace::review::Selection selection, BranchApply branch,
                    Stop stop, Done<workspace::review::BranchOutcome> done);
  // Undoes the guest's changes to `paths` (all of them when absent): files back to the snapshot,
  // new files removed, and the review's base of those paths back to the snapshot too. The host is
  // not touched. Every view is dropped.
  void discard(channel::AgentClient& agent, std::optional<std::vector<std::string>> paths, Stop stop, Done<std::size_t> done);
  // Discards what `select` names of the view `view_id` in the guest: a whole file as discard()
  // does, or only some hunks (the guest's file becomes the view's version without them, and only
  // when the guest's file is still the view's bytes, else kWrongState). Every view is dropped.
  void discard_selected(channel::AgentClient& agent, std::string view_id, std::vector<workspace::review::FileSelection> select,
                        Stop stop, Done<std::size_t> done);
  // Snapshots the host again and carries its edits into the guest; the new snapshot becomes the
  // base (of the review too) and every view is dropped. Fails (nothing changed in the guest) when
  // the agent's own edits conflict.
  void sync(channel::AgentClient& agent, Stop stop, Done<WorkspaceTransfer> done, Steps steps = {});
  // Called after each refresh whose manifest had entries the review refused (a misbehaving
  // guest), before its `done`.
  void on_refused(std::function<void(const MisbehaviourEvent&)> observer) { on_refused_ = std::move(observer); }

 private:
  SandboxWorkspace(uv_loop_t* loop, WorkspaceRequest request, std::string store_dir, workspace::RepoPtr store,
                   workspace::snapshot::SnapshotResult base);
  // Runs `op` after the operations before it; `op` calls its continuation exactly once. With a
  // stop: stopped while still queued, `op` never runs and `stopped` runs at once instead.
  void enqueue(std::function<void(std::function<void()> finished)> op, Stop stop = nullptr, std::function<void()> stopped = {});
  // Keeps `set` as a new view (its view_id set), evicting the least recently used past kMaxViews.
  void keep_view(ChangeSet& set);
  void drop_views();
  // Moves the review's base by `updates` (worker thread), then calls `done` on the loop.
  void move_base(std::function<Result<std::vector<workspace::review::BaseUpdate>>(git_repository*)> updates, Done<void> done);
  // Discards `paths` in the guest (see discard()); `count` is the answer.
  void discard_paths(channel::AgentClient& agent, std::vector<std::string> paths, std::size_t count,
                     std::function<void(Result<std::size_t>)> reply);
  void send_snapshot(channel::AgentClient& agent, const workspace::snapshot::SnapshotResult& snapshot,
                     std::optional<std::string> base_commit, Done<WorkspaceTransfer> done, Stop stop = nullptr);
  struct Listing;
  // The guest's tree as the last refresh accepted it (none refused): the agent's manifest id, the
  // files and their result tree. The next refresh asks for what changed since that manifest and
  // rewrites only the changed folders of that tree.
  struct GuestView {
    std::int64_t manifest = 0;
    workspace::review::Manifest files;
    git_oid tree{};
  };
  void do_refresh(channel::AgentClient& agent, int attempt, Done<ChangeSet> done);
  void fetch_and_diff(channel::AgentClient& agent, int attempt, std::chrono::steady_clock::time_point started,
                      const channel::wire::WorkspaceBounds& bounds, std::shared_ptr<Listing> listing, Done<ChangeSet> done);
  void run_git(channel::AgentClient& agent, std::string script, std::vector<std::string> args, Done<void> done);
  template <typename T>
  void with_view(std::string view_id, Stop stop, std::function<Result<T>(const ChangeSet&, const git_oid& base)> act,
                 std::function<void(Result<T>, std::function<void(Result<T>)>)> after, Done<T> done);

  uv_loop_t* loop_;
  WorkspaceRequest request_;
  std::string store_dir_;
  workspace::RepoPtr store_;
  // What refreshes write into store_ (the guest's blobs, result trees), held in memory; owned by
  // store_'s object database. Cleared, with the views made of it, once it passes half its budget.
  static constexpr std::uint64_t kReviewObjectsBudget = std::uint64_t(64) << 20;  // past it, loose objects
  workspace::review::ReviewObjects review_objects_;
  workspace::snapshot::SnapshotResult base_;
  workspace::snapshot::OidSet guest_has_;  // objects sent to this guest so far
  // The tree reviews diff against: the snapshot's, moved per file by worktree applies.
  git_oid review_base_{};
  struct KeptView {
    ChangeSet set;
    std::uint64_t used = 0;
  };
  std::map<std::string, KeptView> views_;
  std::string latest_;  // the view the last refresh made ("" after the base moved)
  std::uint64_t use_clock_ = 0;
  std::uint64_t views_made_ = 0;
  std::shared_ptr<const GuestView> view_;
  struct Queued {
    std::uint64_t id = 0;
    std::function<void(std::function<void()>)> op;
    Stop stop;
  };
  std::deque<Queued> queue_;
  std::uint64_t queued_ = 0;
  bool running_ = false;
  std::function<void(const MisbehaviourEvent&)> on_refused_;
  std::function<void()> abandon_;  // fails the operation in flight (one at a time) when this object goes
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::core
