// SandboxWorkspace's review side: the kept views, apply (worktree, branch) of a named view and
// the review's base moving after a worktree apply (see sandbox_workspace.h; discard is
// sandbox_workspace_discard.cpp).
#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "server/common/uv_work.h"
#include "server/core/sandbox_workspace.h"
#include "server/core/sandbox_workspace_parts.h"
#include "server/workspace/review/path_rules.h"

namespace lockroom::core {

namespace review = workspace::review;
using namespace workspace_parts;

// --- views ------------------------------------------------------------------------------------

void SandboxWorkspace::keep_view(ChangeSet& set) {
  char tree[GIT_OID_HEXSZ + 1];
  git_oid_tostr(tree, sizeof tree, &set.changes->result_tree());
  set.view_id = "v" + std::to_string(++views_made_) + "-" + std::string(tree).substr(0, 8);
  views_[set.view_id] = KeptView{set, ++use_clock_};
  latest_ = set.view_id;
  auto bytes = [this] {
    std::uint64_t total = 0;
    for (const auto& [id, kept] : views_) total += kept.set.changes->kept_bytes();
    return total;
  };
  while (views_.size() > kMaxViews || (views_.size() > 1 && bytes() > kMaxViewsBytes)) {
    auto oldest = std::min_element(views_.begin(), views_.end(), [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
    views_.erase(oldest);
  }
}

void SandboxWorkspace::drop_views() {
  views_.clear();
  latest_.clear();
}

Result<ChangeSet> SandboxWorkspace::view(const std::string& id) {
  auto it = views_.find(id);
  if (it == views_.end())
    return make_error(ErrorCode::kWrongState, "the view " + id + " of the sandbox's changes is no longer kept (the sandbox's files " +
                                                  kChangedSinceReview + ")");
  it->second.used = ++use_clock_;
  return it->second.set;
}

std::optional<ChangeSet> SandboxWorkspace::latest() {
  if (latest_.empty()) return std::nullopt;
  auto set = view(latest_);
  if (!set) return std::nullopt;
  return *set;
}

// --- the review's base ------------------------------------------------------------------------

void SandboxWorkspace::move_base(std::function<Result<std::vector<review::BaseUpdate>>(git_repository*)> updates, Done<void> done) {
  git_repository* store = store_.get();
  git_oid from = review_base_;
  auto alive = alive_;
  run_blocking<review::MovedBase>(
      loop_,
      [store, from, updates]() -> Result<review::MovedBase> {
        auto wanted = updates(store);
        if (!wanted) return wanted.error();
        return review::update_base(store, from, *wanted);
      },
      [this, alive, done](Result<review::MovedBase> moved) {
        if (!*alive) return;
        if (!moved) return done(moved.error());
        if (!git_oid_equal(&moved->tree, &review_base_)) {
          review_base_ = moved->tree;
          for (const auto& id : moved->written) review_objects_.pin(id);
          latest_.clear();  // refresh:false makes a view of the new base
        }
        done({});
      });
}

// --- apply ------------------------------------------------------------------------------------

template <typename T>
void SandboxWorkspace::with_view(std::string view_id, Stop stop, std::function<Result<T>(const ChangeSet&, const git_oid& base)> act,
                                 std::function<void(Result<T>, std::function<void(Result<T>)>)> after, Done<T> done) {
  enqueue(
      [this, view_id, stop, act, after, done](std::function<void()> finished) {
        auto reply = once_or_abandoned<T>(abandon_, done, finished);
        if (stop && stop->requested()) return reply(cancelled("changes/apply"));
        auto set = view(view_id);
        if (!set) return reply(set.error());
        auto shared = std::make_shared<ChangeSet>(std::move(*set));
        git_oid base = review_base_;
        auto alive = alive_;
        run_blocking<T>(loop_, [act, shared, base] { return act(*shared, base); }, [alive, reply, after](Result<T> r) {
          if (!*alive) return;
          if (after) return after(std::move(r), reply);
          reply(std::move(r));
        });
      },
      stop, [done] { done(cancelled("changes/apply")); });
}

namespace {

// `selection` without the files whose base moved since the view (`moved`), and those as refusals.
std::pair<review::Selection, std::vector<review::FileApplyResult>> without_moved(const review::Changes& changes,
                                                                                const review::Selection& selection,
                                                                                const std::set<std::string>& moved) {
  std::vector<review::FileApplyResult> refused;
  auto refuse = [&](const std::string& path) {
    review::FileApplyResult r;
    r.path = r.old_path = path;
    r.status = review::ApplyStatus::kRefused;
    r.reason = review::printable(path) + " " + kChangedSinceReview + " (an earlier apply moved its base)";
    refused.push_back(std::move(r));
  };
  if (moved.empty()) return {selection, {}};
  std::vector<review::FileSelection> kept;
  if (selection.everything) {
    for (const auto& c : changes.list()) {
      if (moved.count(c.path)) refuse(c.path);
      else kept.push_back({c.path, std::nullopt});
    }
  } else {
    for (const auto& f : selection.files) {
      const auto* c = changes.find(f.path);
      if (c && moved.count(c->path)) refuse(f.path);
      else kept.push_back(f);
    }
  }
  return {review::Selection::only(std::move(kept)), std::move(refused)};
}

}  // namespace

void SandboxWorkspace::apply_worktree(channel::AgentClient&, std::string view_id, review::Selection selection, Stop stop,
                                      Done<std::vector<review::FileApplyResult>> done) {
  using Results = std::vector<review::FileApplyResult>;
  std::string dir = request_.path;
  review::WorktreeApplyOptions options;
  options.max_file_bytes = request_.limits.max_file_bytes;
  std::shared_ptr<std::atomic<bool>> flag = stop ? stop->flag() : nullptr;
  options.stop_before_writing = [flag] { return flag && flag->load(); };
  auto alive = alive_;
  with_view<Results>(
      std::move(view_id), stop,
      [selection, dir, options](const ChangeSet& set, const git_oid& base) -> Result<Results> {
        const auto& c = *set.changes;
        auto moved = review::base_differs(c.store(), c.base_tree(), base, c.list());
        if (!moved) return moved.error();
        auto [still, refused] = without_moved(c, selection, *moved);
        auto applied = review::apply_worktree(c.store(), c.base_tree(), c.result_tree(), dir, still, options);
        if (!applied) return applied.error();
        refused.insert(refused.end(), std::make_move_iterator(applied->begin()), std::make_move_iterator(applied->end()));
        return refused;
      },
      [this, alive](Result<Results> r, std::function<void(Result<Results>)> reply) {
        if (!r) return reply(std::move(r));
        auto updates = review::updates_after_apply(*r);
        if (updates.empty()) return reply(std::move(r));
        auto shared = std::make_shared<Results>(std::move(*r));
        move_base([updates](git_repository*) -> Result<std::vector<review::BaseUpdate>> { return updates; },
                  [shared, reply](Result<void> moved) {
                    // The files are written either way: the answer says so; a base that could not
                    // move shows them again in the next listing.
                    if (!moved) spdlog::warn("the review's base did not move after an apply: {}", moved.error().message);
                    reply(std::move(*shared));
                  });
      },
      std::move(done));
}

void SandboxWorkspace::apply_branch(channel::AgentClient&, std::string view_id, review::Selection selection, BranchApply branch,
                                    Stop stop, Done<review::BranchOutcome> done) {
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
  request.kept_out = base_.kept_out();
  std::shared_ptr<std::atomic<bool>> flag = stop ? stop->flag() : nullptr;
  with_view<review::BranchOutcome>(
      std::move(view_id), stop,
      [selection, request, flag](const ChangeSet& set, const git_oid&) -> Result<review::BranchOutcome> {
        if (flag && flag->load()) return cancelled("changes/apply");
        const auto& c = *set.changes;
        return review::apply_branch(c.store(), c.base_tree(), c.result_tree(), selection, request);
      },
      nullptr, std::move(done));
}

}  // namespace lockroom::core
