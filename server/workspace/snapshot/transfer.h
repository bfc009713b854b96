// Content-addressed transfer of a snapshot to a guest: which objects the guest lacks, and a
// standard git packfile of them (the guest runs `git index-pack --stdin` on it). Git object ids
// are the addresses, so a second snapshot of the same workspace moves only what changed.
// Blocking (reads the store, compresses); called on a worker thread. The sink may forward bytes
// to the guest channel; it is called from this thread.
#pragma once

#include <git2.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::workspace::snapshot {

struct OidLess {
  bool operator()(const git_oid& a, const git_oid& b) const { return git_oid_cmp(&a, &b) < 0; }
};
using OidSet = std::set<git_oid, OidLess>;

// Parses the object ids a guest says it has (hostile input): at most `max_ids` ids of exactly 40
// hex digits each. kInvalidInput names the first bad one; kLimitExceeded if there are too many.
Result<OidSet> parse_oid_set(const std::vector<std::string>& hex_ids, std::size_t max_ids = 4'000'000);

// The objects reachable from `commit` (the commit, its trees, their blobs) that are not in
// `guest_has`, each once: commit first, then trees and blobs as met walking the tree. A tree the
// guest has is taken to come with everything under it (git's connectivity rule), so it is not
// walked; a guest that claims a tree it lacks only deprives itself.
Result<std::vector<git_oid>> objects_to_send(git_repository* store, const git_oid& commit, const OidSet& guest_has);

struct PackInfo {
  std::uint64_t bytes = 0;
  std::uint64_t objects = 0;
};

using PackSink = std::function<Result<void>(std::string_view)>;

// Writes a packfile holding exactly `ids` (no deltas; nothing outside them) to `sink` piece by
// piece as libgit2 produces it. When a pack of the store already holds exactly these objects (the
// first transfer after a snapshot into an empty store) its bytes are sent as they are instead of
// compressing everything again. An error from the sink stops the pack and is returned as is.
Result<PackInfo> write_pack(git_repository* store, const std::vector<git_oid>& ids, const PackSink& sink);

}  // namespace lockroom::workspace::snapshot
