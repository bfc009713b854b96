// ReviewObjects: keeps what a review writes into lockroom's store in memory.
//
// A refresh stores the guest's changed blobs and rewrites the changed folders of the result tree:
// as loose objects that is a compressed file per object (~1 ms each on these disks, 200 per review
// of 100 files). Attached to a store's object database at the highest priority, this backend takes
// those writes into a map instead, up to a byte budget; past it (or for a blob over the per-object
// bound) it declines and libgit2 writes the object loose as before. Reads look here first, then in
// the store's packs and loose objects.
//
// The objects live as long as the store's git_repository (its object database owns the backend)
// or until clear(). They are not needed across processes: a new process's first refresh asks the
// guest for what its store lacks. Thread-safe (a shared mutex): the review reads on the loop thread
// while a refresh writes on a worker.
#pragma once

#include <git2.h>

#include <cstdint>
#include <string>

#include "server/common/result.h"

namespace lockroom::workspace::review {

class ReviewObjects {
 public:
  static constexpr std::uint64_t kDefaultBudget = std::uint64_t(256) << 20;
  static constexpr std::uint64_t kDefaultMaxObject = std::uint64_t(8) << 20;

  // Adds the in-memory backend to `store`'s object database. The returned handle stays valid while
  // `store` is open; do not use it after git_repository_free(store).
  static Result<ReviewObjects> attach(git_repository* store, std::uint64_t budget = kDefaultBudget,
                                      std::uint64_t max_object = kDefaultMaxObject);
  ReviewObjects() = default;

  // Keeps `content` (moved out of it) as the blob `id` without hashing it: only for content whose
  // id the caller computed itself (never an id the guest claims). False, `content` untouched, when
  // it does not fit the budget (then store it through the object database: it goes loose).
  bool keep_verified_blob(const git_oid& id, std::string& content);

  // Bytes and objects held in memory now.
  std::uint64_t bytes() const;
  std::size_t count() const;
  // Forgets every object held except the pinned ones. Only when nothing still refers to the others
  // (no tree, no Changes made while they were held): the caller rebuilds from the guest afterwards.
  void clear();
  // Keeps `id` (when held here) through clear(): the objects of the review's moved base
  // (review_base.h), which outlives every review. unpin_all() when that base is replaced.
  void pin(const git_oid& id);
  void unpin_all();

  struct State;

 private:
  explicit ReviewObjects(State* state) : state_(state) {}
  State* state_ = nullptr;  // owned by the object database's backend
};

}  // namespace lockroom::workspace::review
