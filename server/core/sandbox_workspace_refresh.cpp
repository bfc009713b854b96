// SandboxWorkspace::refresh, the changes out: the agent's manifest (partial after the first, the
// changed files' content inline), the blobs the store lacks, the result tree and its diff with the
// base (see sandbox_workspace.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "server/channel/blob_digest.h"
#include "server/common/uv_work.h"
#include "server/core/sandbox_workspace.h"
#include "server/core/sandbox_workspace_parts.h"
#include "server/workspace/review/blob_store.h"
#include "server/workspace/review/keep_base.h"
#include "server/workspace/review/manifest_patch.h"
#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/result_tree.h"

namespace lockroom::core {

namespace review = workspace::review;
namespace wire = channel::wire;
using namespace workspace_parts;

namespace {

constexpr int kRefreshAttempts = 3;  // files that change while they are fetched: list again
// What a partial manifest may carry inline (the changed files' content, read once by the agent
// for their ids: no workspace.export round trip). 1 MiB per file holds nearly every source file;
// bigger ones stream through workspace.export, flow-controlled, rather than sit in one answer.
// 8 MiB per manifest bounds what the agent and the host hold in memory for it, and how long the
// agent's loop is busy sending it (a few hundred ms under TCG); what does not fit is exported.
// With deltas: a changed file the view already has a version of comes as the bytes that differ.
constexpr wire::InlineBounds kInlineContent{std::int64_t{1} << 20, std::int64_t{8} << 20, true};

}  // namespace

void SandboxWorkspace::refresh(channel::AgentClient& agent, Done<ChangeSet> done, Steps steps, Stop stop) {
  auto cancelled = [done] { done(make_error(ErrorCode::kCancelled, "the listing was cancelled before it looked at the sandbox")); };
  enqueue([this, &agent, done, steps](std::function<void()> finished) {
    // Past half the budget, earlier reviews' objects go: the views made of them with them (this
    // refresh lists and fetches everything again). Nothing else refers to them between operations;
    // the moved base's objects are pinned and stay.
    if (review_objects_.bytes() > kReviewObjectsBudget / 2) {
      review_objects_.clear();
      view_.reset();
      drop_views();
    }
    if (steps) steps("listing the sandbox's files");
    do_refresh(agent, 1, once_or_abandoned<ChangeSet>(abandon_, done, finished));
  }, stop, cancelled);
}

// What the guest listed, checked, and which of its entries the store lacks (worker thread).
struct SandboxWorkspace::Listing {
  channel::WorkspaceManifest listed;
  std::shared_ptr<const GuestView> previous;  // the view a partial manifest was patched onto, if any
  review::Manifest manifest;                   // the guest's whole tree now
  std::vector<review::PathChange> changed;     // against `previous` (points into `manifest`)
  std::vector<std::int64_t> wanted;                                     // agent indexes to export
  std::map<std::int64_t, std::pair<std::string, std::string>> expected;  // index -> id, path
  std::uint64_t bytes_inlined = 0;
  RefreshSteps steps;
};

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

MisbehaviourEvent misbehaviour_of(const std::vector<review::EntryRefusal>& refused) {
  MisbehaviourEvent event;
  event.source = "workspace";
  event.count = refused.size();
  for (std::size_t i = 0; i < refused.size() && i < MisbehaviourEvent::kMaxEntries; ++i) event.entries.push_back({refused[i].path, refused[i].reason});
  event.message = "the guest's workspace listed " + std::to_string(refused.size()) + (refused.size() == 1 ? " entry" : " entries") +
                  " lockroom refused; the review goes on without " + (refused.size() == 1 ? "it" : "them") + " (first: " +
                  refused.front().path + ": " + refused.front().reason + ")";
  return event;
}

// The file a delta makes from the view's version of `path` (protocol/channel/messages_workspace.h,
// InlinedContent), or nullopt when the view has no such file, the store lacks its blob or the
// delta keeps more than it has. Worker thread.
std::optional<std::string> rebuild_from_delta(git_repository* store, const review::Manifest& view, const std::string& path,
                                              const wire::InlinedContent& c) {
  auto it = std::lower_bound(view.files.begin(), view.files.end(), path, [](const review::ManifestFile& f, const std::string& p) { return f.path < p; });
  if (it == view.files.end() || it->path != path) return std::nullopt;
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, store, &it->id) != 0) return std::nullopt;
  workspace::BlobPtr blob(raw);
  std::string_view base(static_cast<const char*>(git_blob_rawcontent(blob.get())), static_cast<std::size_t>(git_blob_rawsize(blob.get())));
  if (std::uint64_t(c.delta->prefix) + c.delta->suffix > base.size()) return std::nullopt;
  std::string file;
  file.reserve(c.delta->prefix + c.content.size() + c.delta->suffix);
  file.append(base.substr(0, c.delta->prefix)).append(c.content).append(base.substr(base.size() - c.delta->suffix));
  return file;
}

// Stores the manifest's inline content of the files among `candidates` (the changed paths the
// view took). AgentClient computed each whole content's id itself and found it the record's, so
// those go into the review's memory as they are (`objects`). A delta is rebuilt from the view's
// version of its path (`view`) and its id checked here; one that does not rebuild the record's
// blob is left out, so the blob is missing and fetched with workspace.export (checked there).
// What does not fit the memory budget goes through store_blob (checked again, written loose).
// Counts them in `steps.inlined`; returns the bytes stored. Worker thread.
Result<std::uint64_t> store_inlined(git_repository* store, review::ReviewObjects& objects, channel::WorkspaceManifest& listed,
                                    const review::Manifest& candidates, const review::Manifest* view, RefreshSteps& steps) {
  std::set<std::string> wanted;
  for (const auto& f : candidates.files) wanted.insert(oid_hex(f.id));
  std::uint64_t bytes = 0;
  for (auto& c : listed.inlined) {
    const auto& e = listed.entries.at(c.entry);
    if (!wanted.count(e.id)) continue;  // refused by the view, or the same content twice
    auto oid = parse_oid(e.id, "inlined file");
    if (!oid) return oid.error();
    if (c.delta) {
      auto rebuilt = view ? rebuild_from_delta(store, *view, e.path, c) : std::nullopt;
      if (!rebuilt || channel::BlobDigest::of(*rebuilt) != e.id) {
        spdlog::warn("the guest's delta for {} does not make the file its manifest names; fetching the whole file", review::printable(e.path));
        continue;
      }
      c.content = std::move(*rebuilt);
    }
    wanted.erase(e.id);
    std::size_t size = c.content.size();
    if (!objects.keep_verified_blob(*oid, c.content))
      if (auto stored = review::store_blob(store, *oid, c.content, e.path); !stored) return stored.error();
    steps.inlined++;
    bytes += size;
  }
  return bytes;
}

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
  if (previous) {
    params.since = previous->manifest;
    params.inline_content = kInlineContent;
  }
  git_repository* store = store_.get();
  git_oid base_tree = review_base_;
  agent.manifest(params, [this, alive, &agent, attempt, started, params, previous, store, base_tree, done](Result<channel::WorkspaceManifest> listed) {
    if (!*alive) return;
    if (!listed) return done(make_error(listed.error().code, "cannot list the guest's workspace: " + listed.error().message));
    auto shared = std::make_shared<channel::WorkspaceManifest>(std::move(*listed));
    auto received = Clock::now();
    run_blocking<std::shared_ptr<Listing>>(
        loop_,
        [shared, params, previous, store, objects = &review_objects_, base_tree, started, received]() -> Result<std::shared_ptr<Listing>> {
          auto out = std::make_shared<Listing>();
          out->listed = std::move(*shared);
          out->steps.manifest_ms = ms_between(started, received);
          out->steps.agent_ms = static_cast<double>(out->listed.summary.agent_ms);
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
          // A refused entry shows no change: its path keeps the snapshot's version.
          if (auto kept = review::keep_base_versions(store, base_tree, *manifest); !kept) return kept.error();
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
          // What came inline is stored first: only the rest is missing.
          auto inline_started = Clock::now();
          auto inlined = store_inlined(store, *objects, out->listed, candidates, previous ? &previous->files : nullptr, out->steps);
          if (!inlined) return inlined.error();
          out->bytes_inlined = *inlined;
          std::vector<wire::InlinedContent>().swap(out->listed.inlined);
          auto inline_done = Clock::now();
          out->steps.store_inlined_ms = ms_between(inline_started, inline_done);
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
          out->steps.exported = static_cast<std::int64_t>(out->wanted.size());
          out->steps.check_ms = ms_between(received, inline_started) + ms_between(inline_done, Clock::now());
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
  git_oid base_tree = review_base_;
  auto fetch_started = std::make_shared<Clock::time_point>(Clock::now());
  auto diff = [this, alive, listing, fetched, store, base_tree, started, fetch_started, done]() {
    run_blocking<Refreshed>(
        loop_,
        [listing, fetched, store, base_tree, started, fetch_started]() -> Result<Refreshed> {
          ChangeSet set;
          set.steps = listing->steps;
          set.blobs_inlined = static_cast<std::uint64_t>(listing->steps.inlined);
          set.bytes_inlined = listing->bytes_inlined;
          set.blobs_fetched = set.blobs_inlined;
          set.bytes_fetched = set.bytes_inlined;
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
          if (!listing->wanted.empty()) set.steps.fetch_ms = ms_between(*fetch_started, tree_started);
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
          if (!set.refused.empty()) {
            MisbehaviourEvent event = misbehaviour_of(set.refused);
            spdlog::warn("{}", event.message);
            if (on_refused_) on_refused_(event);
          }
          view_ = std::move(refreshed->view);
          keep_view(set);
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

}  // namespace lockroom::core
