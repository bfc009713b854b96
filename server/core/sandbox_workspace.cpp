// One sandbox's workspace: snapshot, transfer, sync, apply, discard (see sandbox_workspace.h;
// refresh, the changes out, is sandbox_workspace_refresh.cpp).
#include "server/core/sandbox_workspace.h"

#include <algorithm>
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
  if (auto ids = ids_of(base_)) review_base_ = ids->tree;
  auto objects = review::ReviewObjects::attach(store_.get(), kReviewObjectsBudget);
  if (objects) review_objects_ = *objects;
  else spdlog::warn("reviews of {} write their objects to disk: {}", request_.path, objects.error().message);
}

SandboxWorkspace::~SandboxWorkspace() {
  *alive_ = false;
  auto abandon = std::move(abandon_);
  if (abandon) abandon();
}

void StopSignal::request() {
  flag_->store(true);
  auto queued = std::move(while_queued_);
  while_queued_ = nullptr;
  if (queued) queued();
}

void SandboxWorkspace::enqueue(std::function<void(std::function<void()>)> op, Stop stop, std::function<void()> stopped) {
  std::uint64_t id = ++queued_;
  if (stop) {
    auto alive = alive_;
    stop->while_queued_ = [this, alive, id, stopped] {
      if (!*alive) return;
      auto it = std::find_if(queue_.begin(), queue_.end(), [id](const Queued& q) { return q.id == id; });
      if (it == queue_.end()) return;
      queue_.erase(it);
      if (stopped) stopped();
    };
  }
  queue_.push_back({id, std::move(op), std::move(stop)});
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
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    if (q.stop) q.stop->while_queued_ = nullptr;  // running: it stops at its own points now
    q.op([alive, next] {
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
                                     std::optional<std::string> base_commit, Done<WorkspaceTransfer> done, Stop stop) {
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
      [this, alive, &agent, snapshot, base_commit, done, stop](Result<Packed> packed) {
        if (!*alive) return;
        if (!packed) return done(make_error(packed.error().code, "cannot pack the workspace: " + packed.error().message));
        // The last point where nothing has reached the guest yet.
        if (stop && stop->requested()) return done(make_error(ErrorCode::kCancelled, "workspace/sync was cancelled before it changed the sandbox"));
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

void SandboxWorkspace::sync(channel::AgentClient& agent, Stop stop, Done<WorkspaceTransfer> done, Steps steps) {
  auto cancelled = [done] { done(make_error(ErrorCode::kCancelled, "workspace/sync was cancelled before it started")); };
  enqueue([this, &agent, done, stop, steps](std::function<void()> finished) {
    auto reply = once_or_abandoned<WorkspaceTransfer>(abandon_, done, finished);
    if (stop && stop->requested()) return reply(make_error(ErrorCode::kCancelled, "workspace/sync was cancelled before it started"));
    if (steps) steps("snapshotting the host folder");
    auto request = std::make_shared<WorkspaceRequest>(request_);
    fs::path cache = fs::path(store_dir_).parent_path().parent_path().parent_path();
    auto alive = alive_;
    run_blocking<Snapshotted>(
        loop_, [request, cache] { return take(*request, cache); },
        [this, alive, &agent, reply, stop, steps](Result<Snapshotted> taken) {
          if (!*alive) return;
          if (!taken) return reply(taken.error());
          if (steps) steps("bringing the host's edits into the sandbox");
          auto next = std::make_shared<snap::SnapshotResult>(std::move(taken->result));
          send_snapshot(
              agent, *next, base_.commit_id,
              [this, alive, next, reply](Result<WorkspaceTransfer> t) {
                if (!*alive) return;
                if (t) {
                  base_ = std::move(*next);
                  // The new snapshot is the review's base; every view was of the old one.
                  if (auto ids = ids_of(base_)) review_base_ = ids->tree;
                  review_objects_.unpin_all();
                  drop_views();
                }
                reply(std::move(t));
              },
              stop);
        });
  }, stop, cancelled);
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
