// What the two source files of SandboxWorkspace share: sandbox_workspace.cpp (snapshot in, sync,
// apply, discard) and sandbox_workspace_refresh.cpp (changes out). Internal to them; header only.
#pragma once

#include <git2.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "server/common/result.h"
#include "server/workspace/snapshot/snapshot.h"

namespace lockroom::core::workspace_parts {

using Clock = std::chrono::steady_clock;

inline std::int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

inline Result<git_oid> parse_oid(const std::string& hex, const char* what) {
  git_oid oid{};
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstr(&oid, hex.c_str()) != 0)
    return make_error(ErrorCode::kInternal, std::string("not an object id for the ") + what + ": " + hex);
  return oid;
}

inline std::string oid_hex(const git_oid& oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return buf;
}

// The snapshot's commit and its tree, as object ids.
struct SnapshotIds {
  git_oid commit{}, tree{};
};
inline Result<SnapshotIds> ids_of(const workspace::snapshot::SnapshotResult& s) {
  auto commit = parse_oid(s.commit_id, "snapshot commit");
  if (!commit) return commit.error();
  auto tree = parse_oid(s.tree_id, "snapshot tree");
  if (!tree) return tree.error();
  return SnapshotIds{*commit, *tree};
}

// Wraps `done` so that it runs once: with the result, or with kWrongState if this object goes
// first. Returns the wrapped callback.
template <typename T>
std::function<void(Result<T>)> once_or_abandoned(std::function<void()>& abandon, std::function<void(Result<T>)> done,
                                                 std::function<void()> finished) {
  auto state = std::make_shared<std::pair<std::function<void(Result<T>)>, std::function<void()>>>(std::move(done), std::move(finished));
  abandon = [state] {  // operations run one at a time: this replaces the finished one's
    auto d = std::move(state->first);
    if (d) d(make_error(ErrorCode::kWrongState, "the sandbox ended before its workspace operation finished"));
  };
  return [state](Result<T> r) {
    auto d = std::move(state->first);
    auto f = std::move(state->second);
    if (d) d(std::move(r));
    if (f) f();
  };
}

// The end of every refusal of a view or file the user reviewed before it changed.
inline constexpr const char* kChangedSinceReview = "changed since you reviewed it; list again";

// A mutating operation stopped by a cancel before its first write.
inline Error cancelled(const std::string& what) {
  return make_error(ErrorCode::kCancelled, what + " was cancelled before it changed anything");
}

}  // namespace lockroom::core::workspace_parts
