// WorkspaceService: the workspace.* methods (protocol/channel.md, "Workspace").
//
//   import    makes the workspace a git repository if it is not one (`git init`), opens a stream
//             and takes a pack on it (PackReceiver); the stream's CLOSE says the objects are in.
//   checkout  puts a commit into the worktree (workspace_checkout.h): first time, or a sync.
//   manifest  lists the workspace as `git add -A` would take it (workspace_manifest.h), inline
//             when small, on a stream otherwise; remembered as the workspace's latest manifest.
//             From the first checkout on, a watch (workspace_watch.h) says which files were
//             written since the latest manifest; when nothing else happened only those are
//             looked at (workspace_manifest_delta.h). When the host names a manifest it holds
//             (`since`, one of the last kRememberedManifests), only the differences are sent.
//   export    sends chosen entries of the latest manifest as records on a stream.
//   changed   (notification) whatever the watch of a checked-out workspace reads, debounced
//             (protocol::channel::Debounce, kWorkspaceChangedGapMs): told through on_changed.
//
// A sync of a few paths is done by the agent itself (workspace_fast_sync.h), else by git. Each
// workspace path keeps a stat cache (git's index stands in for it where it has no entry, so even
// the first manifest re-hashes only what changed since) and its latest manifest's paths; at most
// kMaxWorkspaces paths are remembered. Git runs and hashing are done inside the call (the loop
// waits); streams move with the loop, and so does hashing the files the watch saw written
// (workspace_eager_hash.h), a slice per turn, so a manifest finds them ready. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "guest/connection.h"
#include "guest/errors.h"
#include "guest/workspace_eager_hash.h"
#include "guest/workspace_hash.h"
#include "guest/workspace_history.h"
#include "guest/workspace_inline.h"
#include "guest/workspace_listing.h"
#include "guest/workspace_transfers.h"
#include "guest/workspace_watch.h"
#include "guest/poll_set.h"
#include "protocol/channel/debounce.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

class WorkspaceService {
 public:
  static constexpr std::size_t kMaxTransfers = 16;
  static constexpr std::size_t kMaxWorkspaces = 8;

  explicit WorkspaceService(Connection& connection);
  ~WorkspaceService();

  Outcome import(const json& params);
  Outcome checkout(const json& params);
  Outcome manifest(const json& params);
  Outcome export_files(const json& params);

  void pump();
  bool ready() const;
  // Where workspace.changed goes (the agent sends it while a host is attached).
  void on_changed(std::function<void(const std::string& path)> fn) { on_changed_ = std::move(fn); }
  // Milliseconds until a pending workspace.changed is due, or -1.
  int timeout_ms(std::chrono::steady_clock::time_point now) const;
  // The workspace watches' descriptors: each is drained when readable.
  void add_polls(PollSet& set);
  void abandon_all();

 private:
  static constexpr std::size_t kRememberedManifests = 2;
  static constexpr std::int64_t kEagerSliceNs = 10'000'000;  // of hashing per loop turn
  struct Workspace {
    explicit Workspace(std::size_t cache_entries) : cache(cache_entries) {}
    StatCache cache;
    WorkspaceListing listing;
    WorkspaceWatch watch;                // from the first checkout on
    EagerHashes eager;                   // files the watch saw written, hashed while the loop is idle
    ManifestHistory history{kRememberedManifests};  // a partial manifest is relative to one of them
    bool relist = false;                 // the last manifest failed: the next lists everything
    std::int64_t manifest = 0;           // the latest answered; workspace.export indexes its records:
    bool manifest_partial = false;       // partial_records, or (a whole answer) history.latest()
    std::vector<protocol::channel::ManifestEntry> partial_records;
    SentContents sent;               // files sent inline lately: the bases of later deltas
    protocol::channel::Debounce notice{std::chrono::milliseconds(protocol::channel::kWorkspaceChangedGapMs)};
  };
  // Tells on_changed_ when the watch of `path` saw something (now, or when the gap has passed).
  void note_seen(const std::string& path, Workspace& ws);
  Workspace& workspace(const std::string& path, std::size_t cache_entries);
  Outcome start(std::unique_ptr<WorkspaceTransfer> transfer, const char* method, std::uint32_t& stream);

  Connection& connection_;
  std::map<std::string, std::unique_ptr<Workspace>> workspaces_;
  std::map<std::uint32_t, std::unique_ptr<WorkspaceTransfer>> transfers_;
  std::int64_t next_manifest_ = 1;
  std::uint64_t next_import_ = 1;
  std::function<void(const std::string&)> on_changed_;
};

}  // namespace lockroom::agent
