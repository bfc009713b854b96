// EagerHashes: the files the workspace watch saw closed after a write, hashed while the agent's
// loop has nothing else to do, so the review that follows finds their ids (and the bytes it sends
// inline) ready instead of reading and hashing them then (under TCG ~0.3 ms per 14 KB file: a
// third of a 100-file review).
//
// An early hash is only used when nothing can have changed the file since: take() keeps the ones
// on which the watch numbered no event after the hash began (and drops all of them when events
// were lost), and the manifest still compares the file's stat with the one hashed. Only files up
// to kMaxFileBytes are hashed early, a slice of the loop's time at a time; their bytes are kept
// within the bounds the host last asked inline content for (1 MiB a file, 8 MiB in all until it
// asks). Loop thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

#include "guest/workspace_hash.h"
#include "guest/workspace_watch.h"

namespace lockroom::agent {

class EagerHashes {
 public:
  static constexpr std::int64_t kMaxFileBytes = std::int64_t{1} << 20;
  static constexpr std::size_t kMaxQueued = WorkspaceWatch::kMaxClosed;

  // Files to hash (workspace-relative); one already queued is not queued twice.
  void queue(const std::vector<std::string>& paths);
  bool pending() const { return !queue_.empty(); }

  // Hashes queued files of `root` until about `budget_ns` have passed. `events`: the watch's
  // event count now (every event read so far happened before these hashes began).
  void work(const std::string& root, std::uint64_t events, std::int64_t budget_ns);

  // Keep the bytes hashed of files up to `max_file` while they add up to at most `max_total`.
  void keep_bytes(std::uint64_t max_file, std::uint64_t max_total);

  // The hashes nothing touched since, by `seen` (the watch's take() for the manifest that uses
  // them); everything else is forgotten, the queue too.
  EarlierHashes take(const WorkspaceWatch::Changes& seen);
  void clear();

  std::size_t hashed() const { return done_.size(); }

 private:
  struct Done {
    EarlierHash hash;
    std::uint64_t after = 0;  // the watch's event count when the hash began
  };
  std::deque<std::string> queue_;
  std::unordered_set<std::string> queued_;
  std::unordered_map<std::string, Done> done_;
  // Until a manifest asks otherwise: the host's usual inline bounds.
  std::uint64_t keep_file_ = std::uint64_t{1} << 20, keep_total_ = std::uint64_t{8} << 20, kept_ = 0;
};

}  // namespace lockroom::agent
