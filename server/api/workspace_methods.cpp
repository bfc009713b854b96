// changes/* and workspace/sync handlers; see workspace_methods.h.
#include "server/api/workspace_methods.h"

#include "protocol/sandbox.h"
#include "protocol/workspace.h"
#include "server/api/error_map.h"
#include "server/rpc/progress.h"

namespace lockroom::api {

using protocol::json;
using protocol::ParamReader;
using rpc::Reply;
namespace review = workspace::review;

namespace {

std::string oid_hex(const git_oid& oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return buf;
}

json change_json(const review::FileChange& c) {
  json j{{"path", c.path},
         {"status", review::status_name(c.status)},
         {"binary", c.binary},
         {"added", c.added_lines},
         {"removed", c.removed_lines},
         {"oldMode", protocol::mode_json(c.old_mode)},
         {"newMode", protocol::mode_json(c.new_mode)}};
  if (c.old_path != c.path) j["oldPath"] = c.old_path;
  return j;
}

json refused_json(const std::vector<review::EntryRefusal>& refused) {
  json out = json::array();
  for (const auto& r : refused) out.push_back({{"path", r.path}, {"reason", r.reason}});
  return out;
}

json hunk_json(const review::Hunk& h) {
  json lines = json::array();
  for (const auto& l : h.lines) {
    json line{{"origin", std::string(1, l.origin)}};
    protocol::put_text_or_base64(line, "text", l.text);
    lines.push_back(std::move(line));
  }
  return json{{"id", h.id},
              {"header", h.header},
              {"oldStart", h.old_start},
              {"oldLines", h.old_lines},
              {"newStart", h.new_start},
              {"newLines", h.new_lines},
              {"lines", std::move(lines)}};
}

json file_diff_json(const review::FileDiff& d) {
  json j = change_json(d.change);
  json hunks = json::array();
  for (const auto& h : d.hunks) hunks.push_back(hunk_json(h));
  j["hunks"] = std::move(hunks);
  protocol::put_text_or_base64(j, "patch", d.patch);
  return j;
}

review::Selection to_selection(const std::optional<std::vector<protocol::FileSelectionWire>>& select) {
  if (!select) return review::Selection::all();
  std::vector<review::FileSelection> files;
  for (const auto& s : *select) files.push_back({s.path, s.hunks});
  return review::Selection::only(std::move(files));
}

// The sandbox's workspace, or the error reply already sent. `only` limits which sandbox may be named.
std::optional<std::pair<core::SandboxWorkspace*, channel::AgentClient*>> workspace_or_reply(core::SandboxManager& m,
                                                                                         const std::string& id, Reply& reply,
                                                                                         const std::optional<std::string>& only = std::nullopt) {
  if (only && id != *only) {
    reply.error(to_rpc_error(make_error(ErrorCode::kNotFound, "no sandbox '" + id + "' here: this control socket serves sandbox " + *only + " only")));
    return std::nullopt;
  }
  auto ws = m.workspace(id);
  if (!ws) {
    reply.error(to_rpc_error(ws.error()));
    return std::nullopt;
  }
  return *ws;
}

// `path` itself, or anything under it as a folder.
bool under(const std::string& path, const std::string& filter) {
  return path == filter || (path.size() > filter.size() && path.compare(0, filter.size(), filter) == 0 && path[filter.size()] == '/');
}

// The listing; with `filter`, only the changes at or under that path (a rename by either path).
json list_json(const core::ChangeSet& set, const std::optional<std::string>& filter) {
  json files = json::array();
  for (const auto& c : set.changes->list())
    if (!filter || under(c.path, *filter) || under(c.old_path, *filter)) files.push_back(change_json(c));
  return json{{"viewId", set.view_id},
              {"files", std::move(files)},
              {"refused", refused_json(set.refused)},
              {"fetched", {{"blobs", set.blobs_fetched}, {"bytes", set.bytes_fetched}}},
              {"ms", set.refresh_ms}};
}

// $/progress for one request when the editor's connection carries it and the request has a
// workDoneToken (the control socket has no progress). Shared by the request's callbacks.
class Progress {
 public:
  Progress(rpc::Connection* connection, const json& params) {
    if (connection) p_ = std::make_shared<rpc::WorkDoneProgress>(*connection, params);
  }
  // `cancellable`: whether $/cancelRequest can still stop the work (see workspace.md, Cancellation).
  void begin(const std::string& title, bool cancellable) const {
    if (p_) p_->begin(title, std::nullopt, cancellable);
  }
  core::Steps steps() const {
    if (!p_) return {};
    return [p = p_](const std::string& message) { p->report(message); };
  }
  void end(const std::string& message) const {
    if (p_) p_->end(message);
  }

 private:
  std::shared_ptr<rpc::WorkDoneProgress> p_;
};

// How a request's outcome ends its progress.
template <typename T>
std::string outcome_of(const Result<T>& r) {
  if (r) return "done";
  return r.error().code == ErrorCode::kCancelled ? "cancelled" : "failed";
}

// The view a read-only request answers from: the named one, the latest (refresh: false, or
// changes/content), or a fresh one. `answer` runs once with it.
void with_view_for_reading(core::SandboxWorkspace& ws, channel::AgentClient& agent, const std::optional<std::string>& view_id,
                           bool reuse_latest, const Reply& reply, const Progress& progress,
                           std::function<void(Result<core::ChangeSet>)> answer) {
  if (view_id) return answer(ws.view(*view_id));
  if (reuse_latest) {
    if (auto latest = ws.latest()) return answer(std::move(*latest));
  }
  // Cancelled, the dispatcher answers -32800 at once (the later answer is dropped); a listing
  // still queued is dropped too, one already looking at the guest finishes.
  auto stop = std::make_shared<core::StopSignal>();
  reply.on_cancel([stop] { stop->request(); });
  progress.begin("Reading the sandbox's changes", true);
  ws.refresh(agent, [answer, progress](Result<core::ChangeSet> set) {
    progress.end(outcome_of(set));
    answer(std::move(set));
  }, progress.steps(), stop);
}

// Makes `reply` answer a cancel itself: the operation behind `stop` stops if it still can, and
// its own answer (-32800 when it stopped, else its real result) is the reply.
core::Stop stoppable(const Reply& reply) {
  auto stop = std::make_shared<core::StopSignal>();
  reply.on_cancel_answer_myself([stop] { stop->request(); });
  return stop;
}

}  // namespace

json workspace_summary_json(const core::WorkspaceSummary& s) {
  json skipped = json::array();
  for (const auto& e : s.snapshot.skipped) skipped.push_back({{"path", e.path}, {"reason", e.reason}});
  return json{{"path", core::SandboxWorkspace::kGuestPath},
              {"host", s.snapshot.is_git_repo ? "git" : "folder"},
              {"commit", s.snapshot.commit_id},
              {"branch", s.snapshot.branch ? json(*s.snapshot.branch) : json(nullptr)},
              {"files", s.snapshot.file_count},
              {"bytes", s.snapshot.total_bytes},
              {"withheld", s.snapshot.withheld},
              {"skipped", std::move(skipped)},
              {"transfer", {{"objects", s.transfer.objects}, {"packBytes", s.transfer.pack_bytes}}}};
}

void bind_changes_methods(rpc::Dispatcher& d, core::SandboxManager& manager, std::optional<std::string> only, rpc::Connection* connection) {
  core::SandboxManager* m = &manager;

  d.on_request("changes/list", [m, only, connection](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_changes_diff(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto ws = workspace_or_reply(*m, p.sandbox_id, reply, only);
    if (!ws) return;
    auto answer = [reply, path = p.path](Result<core::ChangeSet> set) {
      if (!set) return reply.error(to_rpc_error(set.error()));
      std::optional<std::string> filter = path;
      if (filter) while (filter->size() > 1 && filter->back() == '/') filter->pop_back();
      reply.result(list_json(*set, filter));
    };
    with_view_for_reading(*ws->first, *ws->second, p.view_id, !p.refresh, reply, Progress(connection, params), answer);
  });

  d.on_request("changes/diff", [m, only, connection](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_changes_diff(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto ws = workspace_or_reply(*m, p.sandbox_id, reply, only);
    if (!ws) return;
    auto answer = [reply, path = p.path](Result<core::ChangeSet> set) {
      if (!set) return reply.error(to_rpc_error(set.error()));
      json files = json::array();
      if (path) {
        auto diff = set->changes->diff(*path);
        if (!diff) return reply.error(to_rpc_error(diff.error()));
        files.push_back(file_diff_json(*diff));
      } else {
        auto diffs = set->changes->diff_all();
        if (!diffs) return reply.error(to_rpc_error(diffs.error()));
        for (const auto& d : *diffs) files.push_back(file_diff_json(d));
      }
      reply.result(json{{"viewId", set->view_id}, {"files", std::move(files)}, {"refused", refused_json(set->refused)}});
    };
    with_view_for_reading(*ws->first, *ws->second, p.view_id, !p.refresh, reply, Progress(connection, params), answer);
  });

  d.on_request("changes/content", [m, only](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_changes_content(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto ws = workspace_or_reply(*m, p.sandbox_id, reply, only);
    if (!ws) return;
    auto answer = [reply, p](Result<core::ChangeSet> set) {
      if (!set) return reply.error(to_rpc_error(set.error()));
      auto content = set->changes->content(p.path, p.base ? review::Side::kBase : review::Side::kCurrent);
      if (!content) return reply.error(to_rpc_error(content.error()));
      json out{{"path", p.path}, {"side", p.base ? "base" : "current"}, {"binary", content->binary}, {"mode", protocol::mode_json(content->mode)}};
      protocol::put_text_or_base64(out, "data", content->bytes);
      reply.result(std::move(out));
    };
    with_view_for_reading(*ws->first, *ws->second, p.view_id, true, reply, Progress(nullptr, params), answer);
  });

  d.on_request("changes/apply", [m, only, connection](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_changes_apply(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto ws = workspace_or_reply(*m, p.sandbox_id, reply, only);
    if (!ws) return;
    Progress progress(connection, params);
    progress.begin(p.branch_mode ? "Saving the changes as a branch" : "Applying the changes", true);
    auto stop = stoppable(reply);
    if (p.branch_mode) {
      ws->first->apply_branch(*ws->second, p.view_id, to_selection(p.select), core::BranchApply{p.branch, p.force}, stop,
                              [reply, progress](Result<review::BranchOutcome> r) {
                                progress.end(outcome_of(r));
                                if (!r) return reply.error(to_rpc_error(r.error()));
                                json refused = json::array();
                                for (const auto& x : r->refused) refused.push_back({{"path", x.path}, {"reason", x.reason}});
                                json out{{"mode", "branch"}, {"created", r->created}, {"conflicts", r->conflicts}, {"refused", std::move(refused)}};
                                if (r->created) {
                                  out["branch"] = r->ref_name;
                                  out["commit"] = oid_hex(r->commit);
                                  if (r->snapshot_commit) out["snapshotCommit"] = oid_hex(*r->snapshot_commit);
                                }
                                reply.result(std::move(out));
                              });
      return;
    }
    ws->first->apply_worktree(*ws->second, p.view_id, to_selection(p.select), stop,
                              [reply, progress](Result<std::vector<review::FileApplyResult>> r) {
      progress.end(outcome_of(r));
      if (!r) return reply.error(to_rpc_error(r.error()));
      json files = json::array();
      std::map<std::string, int> counts;
      for (const auto& f : *r) {
        json j{{"path", f.path}, {"status", review::apply_status_name(f.status)}};
        if (f.old_path != f.path && !f.old_path.empty()) j["oldPath"] = f.old_path;
        if (!f.reason.empty()) j["reason"] = f.reason;
        if (!f.conflict_text.empty()) protocol::put_text_or_base64(j, "conflict", f.conflict_text);
        counts[review::apply_status_name(f.status)]++;
        files.push_back(std::move(j));
      }
      reply.result(json{{"mode", "worktree"}, {"files", std::move(files)}, {"counts", counts}});
    });
  });

  d.on_request("changes/discard", [m, only, connection](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_changes_discard(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto ws = workspace_or_reply(*m, p.sandbox_id, reply, only);
    if (!ws) return;
    Progress progress(connection, params);
    progress.begin("Discarding changes in the sandbox", true);
    auto stop = stoppable(reply);
    auto answer = [reply, progress](Result<std::size_t> r) {
      progress.end(outcome_of(r));
      if (!r) return reply.error(to_rpc_error(r.error()));
      reply.result(json{{"discarded", *r}});
    };
    if (p.select) {
      std::vector<review::FileSelection> files;
      for (const auto& s : *p.select) files.push_back({s.path, s.hunks});
      return ws->first->discard_selected(*ws->second, *p.view_id, std::move(files), stop, answer);
    }
    ws->first->discard(*ws->second, p.paths, stop, answer);
  });
}

void bind_workspace_methods(rpc::Connection& connection, core::SandboxManager& manager) {
  rpc::Dispatcher& d = connection.dispatcher();
  core::SandboxManager* m = &manager;
  rpc::Connection* conn = &connection;
  bind_changes_methods(d, manager, std::nullopt, conn);

  d.on_request("workspace/sync", [m, conn](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_sandbox_id(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto ws = workspace_or_reply(*m, p.sandbox_id, reply);
    if (!ws) return;
    Progress progress(conn, params);
    progress.begin("Syncing the workspace into the sandbox", true);
    core::SandboxWorkspace* target = ws->first;
    target->sync(*ws->second, stoppable(reply), [reply, target, progress](Result<core::WorkspaceTransfer> t) {
      progress.end(outcome_of(t));
      if (!t) return reply.error(to_rpc_error(t.error()));
      reply.result(json{{"commit", target->base().commit_id},
                        {"files", target->base().file_count},
                        {"withheld", target->base().withheld},
                        {"transfer", {{"objects", t->objects}, {"packBytes", t->pack_bytes}, {"packMs", t->pack_ms}, {"importMs", t->import_ms}}}});
    }, progress.steps());
  });
}

}  // namespace lockroom::api
