// SandboxWorkspace's discard in the guest: of whole files (back to the snapshot, the review's base
// with them) or of some hunks of a view's files (see sandbox_workspace.h).
#include <set>

#include <spdlog/spdlog.h>

#include "server/channel/blob_digest.h"
#include "server/common/uv_work.h"
#include "server/core/sandbox_workspace.h"
#include "server/core/sandbox_workspace_parts.h"
#include "server/workspace/review/path_rules.h"

namespace lockroom::core {

namespace review = workspace::review;
using namespace workspace_parts;

// --- discard ----------------------------------------------------------------------------------

void SandboxWorkspace::discard(channel::AgentClient& agent, std::optional<std::vector<std::string>> paths, Stop stop, Done<std::size_t> done) {
  enqueue(
      [this, &agent, paths, done, stop](std::function<void()> finished) {
        auto reply = once_or_abandoned<std::size_t>(abandon_, done, finished);
        if (stop && stop->requested()) return reply(cancelled("changes/discard"));
        auto alive = alive_;
        std::string base = base_.commit_id;
        if (!paths) {
          // Everything: the branch, index and worktree back to the snapshot; untracked files go
          // (ignored ones, such as build output, stay); the review's base back to the snapshot.
          // The count is of the changes the last view saw, or a fresh one when there is none.
          auto reset_all = [this, alive, &agent, base, reply, stop](std::size_t count) {
            if (stop && stop->requested()) return reply(cancelled("changes/discard"));
            run_git(agent, "git reset -q --hard \"$0\" && git clean -fdq", {base}, [this, alive, count, reply](Result<void> r) {
              if (!*alive) return;
              drop_views();
              if (auto ids = ids_of(base_)) review_base_ = ids->tree;
              review_objects_.unpin_all();
              if (!r) return reply(r.error());
              reply(count);
            });
          };
          if (auto last = latest()) return reset_all(last->changes->list().size());
          return do_refresh(agent, 1, [alive, reset_all](Result<ChangeSet> set) {
            if (*alive) reset_all(set ? set->changes->list().size() : 0);
          });
        }
        // Chosen paths: a rename is undone as a whole (its old path is restored too).
        std::set<std::string> touched(paths->begin(), paths->end());
        std::set<std::string> changes;  // each change named once (a rename by either of its paths)
        auto last = latest();
        if (last) {
          for (const auto& p : *paths) {
            if (const auto* change = last->changes->find(p)) {
              touched.insert(change->path);
              touched.insert(change->old_path);
              changes.insert(change->path);
            } else {
              changes.insert(p);
            }
          }
        }
        std::size_t count = last ? changes.size() : paths->size();
        discard_paths(agent, std::vector<std::string>(touched.begin(), touched.end()), count, reply);
      },
      stop, [done] { done(cancelled("changes/discard")); });
}

// Each of `paths` back to the snapshot's version in the guest, or removed when the snapshot has
// none; the review's base of those paths back to the snapshot too; every view dropped.
void SandboxWorkspace::discard_paths(channel::AgentClient& agent, std::vector<std::string> paths, std::size_t count,
                                     std::function<void(Result<std::size_t>)> reply) {
  auto alive = alive_;
  std::string base = base_.commit_id;
  auto ids = ids_of(base_);
  if (!ids) return reply(ids.error());
  workspace::TreePtr tree;
  {
    git_tree* t = nullptr;
    if (int rc = git_tree_lookup(&t, store_.get(), &ids->tree); rc != 0)
      return reply(make_error(ErrorCode::kInternal, workspace::git_error_text("the base tree " + base + " is not in lockroom's store", rc)));
    tree.reset(t);
  }
  std::vector<std::string> restore{base}, remove;
  std::set<std::string> touched;
  for (const auto& p : paths) {
    if (p.empty()) continue;
    touched.insert(p);
    git_tree_entry* entry = nullptr;
    if (git_tree_entry_bypath(&entry, tree.get(), p.c_str()) == 0) {
      git_tree_entry_free(entry);
      restore.push_back(p);
    } else {
      remove.push_back(p);
    }
  }
  std::string script = "set -e; b=\"$0\"; n=$1; shift; i=0; for p; do i=$((i+1)); "
                       "if [ $i -le $n ]; then git checkout -q \"$b\" -- \"$p\"; else rm -rf -- \"$p\"; fi; done";
  std::vector<std::string> args{base, std::to_string(restore.size() - 1)};
  args.insert(args.end(), restore.begin() + 1, restore.end());
  args.insert(args.end(), remove.begin(), remove.end());
  git_oid snapshot_tree = ids->tree;
  run_git(agent, script, args, [this, alive, count, reply, touched, snapshot_tree](Result<void> r) {
    if (!*alive) return;
    drop_views();
    if (!r) return reply(r.error());
    move_base([touched, snapshot_tree](git_repository* store) { return review::updates_back_to(store, snapshot_tree, touched); },
              [count, reply](Result<void> moved) {
                if (!moved) spdlog::warn("the review's base did not go back after a discard: {}", moved.error().message);
                reply(count);
              });
  });
}

namespace {

// A file whose hunks are rejected: what the guest must still hold, and what it becomes.
struct Rewrite {
  std::string path;
  std::string expected_id;  // the view's blob
  std::string content;      // the view's version without the rejected hunks
  std::int64_t mode = 0644;
};

// The rewrites `select`'s hunk entries ask for, checked against the view (worker thread).
Result<std::vector<Rewrite>> plan_rewrites(const ChangeSet& set, const git_oid& current_base, const std::vector<review::FileSelection>& select) {
  const auto& c = *set.changes;
  std::vector<review::FileChange> named;
  for (const auto& f : select) {
    const auto* change = c.find(f.path);
    if (!change) return make_error(ErrorCode::kNotFound, review::printable(f.path) + " has no change in the view " + set.view_id);
    named.push_back(*change);
  }
  auto moved = review::base_differs(c.store(), c.base_tree(), current_base, named);
  if (!moved) return moved.error();
  if (!moved->empty()) return make_error(ErrorCode::kWrongState, review::printable(*moved->begin()) + " " + kChangedSinceReview);
  std::vector<Rewrite> out;
  for (std::size_t i = 0; i < select.size(); ++i) {
    const auto& change = named[i];
    std::string name = review::printable(change.path);
    if (change.binary || change.new_mode == 0 || change.new_mode == static_cast<std::uint32_t>(GIT_FILEMODE_LINK))
      return make_error(ErrorCode::kInvalidInput, name + " has no hunks to discard (binary, deleted or a symlink): discard the whole file");
    auto diff = c.diff(change.path);
    if (!diff) return diff.error();
    std::set<std::string> rejected(select[i].hunks->begin(), select[i].hunks->end()), kept;
    for (const auto& h : diff->hunks) {
      if (!rejected.erase(h.id)) kept.insert(h.id);
    }
    if (!rejected.empty())
      return make_error(ErrorCode::kInvalidInput, "hunk " + *rejected.begin() + " is not one of " + name + "'s hunks in the view " + set.view_id);
    std::string base;
    if (change.old_mode != 0) {
      auto bytes = c.content(change.old_path, review::Side::kBase);
      if (!bytes) return bytes.error();
      base = std::move(bytes->bytes);
    }
    auto content = review::apply_selected_hunks(base, diff->hunks, kept, change.path);
    if (!content) return content.error();
    char id[GIT_OID_HEXSZ + 1];
    git_oid_tostr(id, sizeof id, &change.new_id);
    out.push_back({change.path, id, std::move(*content), change.new_mode == static_cast<std::uint32_t>(GIT_FILEMODE_BLOB_EXECUTABLE) ? 0755 : 0644});
  }
  return out;
}

}  // namespace

void SandboxWorkspace::discard_selected(channel::AgentClient& agent, std::string view_id, std::vector<review::FileSelection> select,
                                        Stop stop, Done<std::size_t> done) {
  enqueue(
      [this, &agent, view_id, select, done, stop](std::function<void()> finished) {
        auto reply = once_or_abandoned<std::size_t>(abandon_, done, finished);
        if (stop && stop->requested()) return reply(cancelled("changes/discard"));
        auto set = view(view_id);
        if (!set) return reply(set.error());
        std::vector<review::FileSelection> hunks;
        std::vector<std::string> whole;
        for (const auto& f : select) {
          if (f.hunks) {
            hunks.push_back(f);
          } else if (const auto* change = set->changes->find(f.path)) {
            whole.push_back(change->path);
            whole.push_back(change->old_path);
          } else {
            return reply(make_error(ErrorCode::kNotFound, review::printable(f.path) + " has no change in the view " + view_id));
          }
        }
        auto shared = std::make_shared<ChangeSet>(std::move(*set));
        git_oid base = review_base_;
        auto alive = alive_;
        std::size_t count = select.size();
        run_blocking<std::vector<Rewrite>>(
            loop_, [shared, base, hunks] { return plan_rewrites(*shared, base, hunks); },
            [this, alive, &agent, reply, stop, whole, count](Result<std::vector<Rewrite>> planned) {
              if (!*alive) return;
              if (!planned) return reply(planned.error());
              auto rewrites = std::make_shared<std::vector<Rewrite>>(std::move(*planned));
              // First every guest file is checked to still be the view's, then the writes: a file
              // that changed refuses the whole request before anything is written.
              auto check = std::make_shared<std::function<void(std::size_t)>>();
              auto write = std::make_shared<std::function<void(std::size_t)>>();
              auto finish = [this, alive, &agent, reply, whole, count] {
                if (whole.empty()) {
                  drop_views();
                  return reply(count);
                }
                discard_paths(agent, whole, count, reply);
              };
              *write = [this, alive, &agent, rewrites, write, reply, finish](std::size_t i) {
                if (!*alive) return;
                if (i == rewrites->size()) return finish();
                const Rewrite& r = (*rewrites)[i];
                agent.upload(std::string(kGuestPath) + "/" + r.path, r.content, r.mode, [this, alive, write, reply, i](Result<std::int64_t> w) {
                  if (!*alive) return;
                  if (!w) {
                    drop_views();
                    return reply(w.error());
                  }
                  (*write)(i + 1);
                });
              };
              *check = [this, alive, &agent, rewrites, check, write, reply, stop](std::size_t i) {
                if (!*alive) return;
                if (i == rewrites->size()) {
                  if (stop && stop->requested()) return reply(cancelled("changes/discard"));
                  return (*write)(0);
                }
                const Rewrite& r = (*rewrites)[i];
                auto bytes = std::make_shared<std::string>();
                agent.download(
                    std::string(kGuestPath) + "/" + r.path, [bytes](std::string_view data) { bytes->append(data); },
                    [alive, rewrites, check, reply, bytes, i](Result<std::int64_t> read) {
                      if (!*alive) return;
                      const Rewrite& r = (*rewrites)[i];
                      if (!read || channel::BlobDigest::of(*bytes) != r.expected_id)
                        return reply(make_error(ErrorCode::kWrongState, review::printable(r.path) + " " + kChangedSinceReview));
                      (*check)(i + 1);
                    });
              };
              (*check)(0);
            });
      },
      stop, [done] { done(cancelled("changes/discard")); });
}

}  // namespace lockroom::core
