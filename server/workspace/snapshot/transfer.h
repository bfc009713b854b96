// Content-addressed transfer of a snapshot to a guest: which objects the guest lacks, and a
// standard git packfile of them (the guest runs `git index-pack --stdin` on it). Git object ids
// are the addresses, so a second snapshot of the same workspace moves only what changed.
// Blocking (reads the store, compresses); called on a worker thread. The sink may forward bytes
// to the guest channel; it is called from this thread.
#pragma once

#include <git2.h>

#include <cstdint>
#include <filesystem>
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

// How to send `ids` as several packs (the guest takes one `workspace.import` per pack before its
// `workspace.checkout`): the store's packs whose objects are all wanted, to send as they are with
// send_store_pack() (no compression again; each is self-contained, no pack's objects in another),
// and the objects left over, for one write_pack(). A large snapshot is stored as several packs
// plus loose objects for big files, so this spares re-compressing nearly all of it.
struct StorePack {
  std::filesystem::path path;  // the .pack file
  std::uint64_t objects = 0;
  std::uint64_t bytes = 0;
};
struct PackPlan {
  std::vector<StorePack> store_packs;
  std::vector<git_oid> rest;  // in the order of `ids`, each once; empty: no write_pack() needed
};
Result<PackPlan> plan_packs(git_repository* store, const std::vector<git_oid>& ids);

// Streams one of plan_packs()'s store packs to `sink` as it is.
Result<PackInfo> send_store_pack(const StorePack& pack, const PackSink& sink);

}  // namespace lockroom::workspace::snapshot
