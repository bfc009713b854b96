// Whether a workspace store is in use, and when it was last used, so that a prune
// (store_prune.h) never removes a store a running lockroom needs and can tell old stores apart.
//
// The marker is the file <store>/lockroom-in-use. open_store() (snapshot_store.h) calls
// hold_store(): it takes a shared flock(2) on the marker, keeps it for as long as this process
// runs, and sets the marker's mtime to now on every call (every snapshot). A prune takes the
// exclusive lock, without waiting, before it removes a store: it fails while any process holds
// the store. flock locks go with their process, so a crashed server leaves no stale lock behind.
// take_snapshot() also records which folder the store is of in <store>/lockroom-workspace.
//
// Blocking file-system calls; any thread (the held locks are behind a mutex).
#pragma once

#include <string>

#include "server/common/result.h"

namespace lockroom::workspace::snapshot {

inline constexpr const char* kStoreInUseFile = "lockroom-in-use";
inline constexpr const char* kStoreWorkspaceFile = "lockroom-workspace";

// Holds `store_dir` in use by this process (creating the directory if needed) and records now as
// its last use. Holding a store already held only refreshes the time.
Result<void> hold_store(const std::string& store_dir);

// Lets go of every store this process holds. Only for a process that is done with all of its
// sandboxes (the integration tests, before they remove the stores they made); a server never
// calls it.
void release_held_stores();

// Writes `workspace_real_path` to <store>/lockroom-workspace unless it already holds it.
Result<void> record_store_workspace(const std::string& store_dir, const std::string& workspace_real_path);

}  // namespace lockroom::workspace::snapshot
