// ManifestHistory: a workspace's latest manifests, which a partial manifest (`since`) is relative
// to. The latest is kept whole; each older one only as its entries where it differs from the one
// after it (undo records: its entry, or a removal record where it listed none). A refresh whose
// watch saw 100 of 8,370 files written then costs those 100 entries: no copy of the tree to
// remember it, no walk of the tree to find what changed (under TCG each was ~10 ms).
//
// A `since` checked with remembers() before a push can still be answered after it: one manifest
// more than `remembered` is kept. Entries are sorted by path bytes, unique; a removal record has
// mode kModeRemoved. Loop thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

class ManifestHistory {
 public:
  using Entry = protocol::channel::ManifestEntry;

  // `remembered`: how many manifests (the latest included) a `since` may name; at least 1.
  explicit ManifestHistory(std::size_t remembered = 2);

  bool empty() const { return latest_id_ == 0; }
  std::int64_t latest_id() const { return latest_id_; }
  const std::vector<Entry>& latest() const { return latest_; }
  // Whether `id` is one of the `remembered` latest manifests (a `since` the next answer may use).
  bool remembers(std::int64_t id) const;

  // Manifest `id`'s entry for `path`; null when it listed none or `id` is no longer kept.
  const Entry* find(std::int64_t id, const std::string& path) const;

  // The records of a partial manifest taking remembered manifest `id` to the latest: each entry
  // of the latest that is new or differs (mode, id or size), and a removal record for each path
  // no longer listed. Empty for the latest itself; nullopt for an id no longer kept.
  std::optional<std::vector<Entry>> records_since(std::int64_t id) const;

  // A new latest manifest (ids increase): a whole listing, or the latest with `changes` applied
  // (entries replaced or added, removal records taking paths out; sorted, unique).
  void push_whole(std::int64_t id, std::vector<Entry> entries);
  void push_changes(std::int64_t id, const std::vector<Entry>& changes);

  void forget_all();

 private:
  struct Older {
    std::int64_t id = 0;
    std::vector<Entry> undo;  // this manifest's entries where the next one differs, sorted
  };
  void remember_older(Older older);
  bool kept(std::int64_t id) const;

  std::size_t remembered_;
  std::int64_t latest_id_ = 0;
  std::vector<Entry> latest_;
  std::deque<Older> older_;  // oldest first, at most `remembered_`; back() is the one just before the latest
};

// The records that make `now` from `before` (both sorted): entries of `now` that are new or
// differ, and a removal record for each path of `before` gone from `now`.
std::vector<protocol::channel::ManifestEntry> manifest_delta(const std::vector<protocol::channel::ManifestEntry>& before,
                                                             const std::vector<protocol::channel::ManifestEntry>& now);

// A removal record for `path` (mode kModeRemoved, zero id, size 0).
protocol::channel::ManifestEntry removal_record(const std::string& path);

}  // namespace lockroom::agent
