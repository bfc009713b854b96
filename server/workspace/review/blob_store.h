// Getting the guest's files into lockroom's store and turning a manifest into the result tree.
//
// The store is lockroom's private bare repository (never the user's). missing_blobs says which
// blobs to ask the guest for; store_blob / BlobWriter accept a blob only if its content hashes to
// the id the guest claimed; build_result_tree writes the tree of a manifest once every blob is in.
// Blocking file I/O: call from a worker thread, one store per thread at a time.
#pragma once

#include <git2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/review/manifest.h"

namespace lockroom::workspace::review {

// The distinct blob ids of `manifest` that the store does not have, sorted.
Result<std::vector<git_oid>> missing_blobs(git_repository* store, const Manifest& manifest);

// Stores `content` as a blob if it hashes to `claimed`; otherwise fails with
// "blob for PATH does not match its id" and stores nothing. `path` is only for messages.
Result<void> store_blob(git_repository* store, const git_oid& claimed, std::string_view content, std::string_view path);

// Receives one blob in chunks. Holds at most `declared_size` bytes (refuses more), checks the
// hash at finish() and only then writes the blob to the store; dropping it unfinished stores
// nothing.
class BlobWriter {
 public:
  BlobWriter(git_repository* store, const git_oid& claimed, std::uint64_t declared_size, std::string path,
             std::uint64_t max_blob_bytes = ManifestLimits{}.max_blob_bytes);
  Result<void> write(std::string_view chunk);
  Result<void> finish();

 private:
  git_repository* store_;
  git_oid claimed_;
  std::uint64_t declared_size_;
  std::uint64_t max_blob_bytes_;
  std::string path_;
  std::string buffer_;
  bool finished_ = false;
};

// Writes the tree of `manifest` into the store and returns its id. Fails, naming the paths, when a
// blob is still missing, is not a blob, or has a size other than the manifest claimed.
Result<git_oid> build_result_tree(git_repository* store, const Manifest& manifest);

}  // namespace lockroom::workspace::review
