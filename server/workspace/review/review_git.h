// Extra RAII owners for libgit2 objects that the review library needs beyond git_util.h, plus
// small helpers for object ids. Used only inside server/workspace/review/.
#pragma once

#include <git2.h>

#include <string>
#include <string_view>

#include "server/workspace/git_util.h"

namespace lockroom::workspace::review {

using OdbObjectPtr = GitPtr<git_odb_object, git_odb_object_free>;
using ObjectPtr = GitPtr<git_object, git_object_free>;
using ConflictIteratorPtr = GitPtr<git_index_conflict_iterator, git_index_conflict_iterator_free>;

// A git_buf that disposes itself.
struct OwnedBuf {
  git_buf buf = GIT_BUF_INIT;
  OwnedBuf() = default;
  OwnedBuf(const OwnedBuf&) = delete;
  OwnedBuf& operator=(const OwnedBuf&) = delete;
  ~OwnedBuf() { git_buf_dispose(&buf); }
  std::string_view view() const { return buf.ptr ? std::string_view(buf.ptr, buf.size) : std::string_view(); }
};

// A git_merge_file_result that frees itself.
struct OwnedMergeFileResult {
  git_merge_file_result result{};
  OwnedMergeFileResult() = default;
  OwnedMergeFileResult(const OwnedMergeFileResult&) = delete;
  OwnedMergeFileResult& operator=(const OwnedMergeFileResult&) = delete;
  ~OwnedMergeFileResult() { git_merge_file_result_free(&result); }
};

inline std::string oid_hex(const git_oid& id) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &id);
  return hex;
}

struct OidLess {
  bool operator()(const git_oid& a, const git_oid& b) const { return git_oid_cmp(&a, &b) < 0; }
};

inline bool oid_equal(const git_oid& a, const git_oid& b) { return git_oid_equal(&a, &b) != 0; }

}  // namespace lockroom::workspace::review
