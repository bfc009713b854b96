// Listing and removing workspace stores: <cache>/workspaces/<key>/store.git keeps every snapshot
// of a folder and every file fetched back from its sandboxes, so copies of the user's code pile
// up there until something removes them. `lockroom workspace ls|prune` (server/cli) is that
// something; the integration tests use it to remove the stores of their temporary folders.
//
// A store is never removed while a process holds it (store_use.h): the removal takes the
// store's exclusive lock first, without waiting, and renames the store away before deleting it.
// should_prune() is the pure decision; the rest is blocking file-system I/O on the caller's
// thread (a CLI command, or a test's end).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace lockroom::workspace::snapshot {

struct StoreListing {
  std::filesystem::path dir;              // <workspaces>/<key>: what a removal deletes
  std::string key;                        // <key>, e.g. "my-app-3f2a9c0d11e4b7a2"
  std::optional<std::string> workspace;   // the folder it is a store of, when recorded
  bool workspace_exists = false;          // that folder is still there
  std::chrono::system_clock::time_point last_used;  // the last snapshot (or store change)
  std::uint64_t bytes = 0;                // on disk
  bool in_use = false;                    // a running lockroom holds it
};

// The stores under `workspaces_dir` (<cache>/workspaces), sorted by key. A missing folder has
// none. Entries that are not stores are not listed.
std::vector<StoreListing> list_stores(const std::filesystem::path& workspaces_dir);

struct PruneRule {
  // Remove stores not used for this long; nullopt: only what `all` and `orphaned` say.
  std::optional<std::chrono::hours> unused_for;
  bool all = false;       // every store not in use
  bool orphaned = true;   // stores of folders that no longer exist, whatever their age
};

// Whether `store` should go under `rule` at `now`. A store in use never should.
bool should_prune(const StoreListing& store, const PruneRule& rule, std::chrono::system_clock::time_point now);

// Removes one store, unless a process holds it: true when it was removed, false when in use.
// Fails (kUnavailable, naming the store) when it cannot be removed.
Result<bool> remove_store(const StoreListing& store);

struct PruneReport {
  std::vector<StoreListing> removed;
  std::vector<StoreListing> kept_in_use;  // stores the rule chose but a running lockroom holds
  std::vector<std::string> errors;        // stores that could not be removed, with why
  std::uint64_t bytes_freed = 0;
};

// Removes every store under `workspaces_dir` that should_prune() chooses, and the leftovers of an
// interrupted removal.
PruneReport prune_stores(const std::filesystem::path& workspaces_dir, const PruneRule& rule,
                         std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

}  // namespace lockroom::workspace::snapshot
