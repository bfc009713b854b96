// RAII owners for libgit2 objects and the one place libgit2 errors become readable text.
// Shared by the snapshot and review libraries.
#pragma once

#include <git2.h>

#include <memory>
#include <string>

namespace lockroom::workspace {

// Initialises libgit2 once per process (thread-safe, idempotent).
void ensure_libgit2();

// "what: <libgit2's last error message>" for the error code `rc`.
std::string git_error_text(const std::string& what, int rc);

template <typename T, void (*Free)(T*)>
struct GitDeleter {
  void operator()(T* p) const noexcept { if (p) Free(p); }
};
template <typename T, void (*Free)(T*)>
using GitPtr = std::unique_ptr<T, GitDeleter<T, Free>>;

using RepoPtr = GitPtr<git_repository, git_repository_free>;
using TreePtr = GitPtr<git_tree, git_tree_free>;
using CommitPtr = GitPtr<git_commit, git_commit_free>;
using BlobPtr = GitPtr<git_blob, git_blob_free>;
using IndexPtr = GitPtr<git_index, git_index_free>;
using DiffPtr = GitPtr<git_diff, git_diff_free>;
using PatchPtr = GitPtr<git_patch, git_patch_free>;
using OdbPtr = GitPtr<git_odb, git_odb_free>;
using TreeBuilderPtr = GitPtr<git_treebuilder, git_treebuilder_free>;
using ReferencePtr = GitPtr<git_reference, git_reference_free>;
using StatusListPtr = GitPtr<git_status_list, git_status_list_free>;
using SignaturePtr = GitPtr<git_signature, git_signature_free>;

inline void free_git_buf(git_buf* b) { git_buf_dispose(b); }

}  // namespace lockroom::workspace
