// The guest's report of its workspace: one entry per file {path, mode, id, size}. Hostile input.
//
// validate_manifest / parse_manifest_json turn what the guest sent into a Manifest: the entries
// lockroom accepts (sorted by path, ids parsed) and, per refused entry, the reason. One bad entry
// does not sink the others, but any refusal means the guest misbehaved and is reported as such.
// Whole-manifest bounds (entry count, total claimed size) fail the manifest with an error naming
// the offenders. Pure: no I/O. Called on the loop thread (it is cheap) or a worker.
//
// JSON form (an array; unknown keys are ignored):
//   [{"path": "src/a.c", "mode": "100644", "id": "<40 hex>", "size": 123}, ...]
// mode is "100644" (file), "100755" (executable) or "120000" (symlink; the blob is the link
// target), given as that octal string or as the number it denotes (33188, 33261, 40960).
// id is the git blob id (hex SHA-1 of "blob <size>\0<content>"); size is the content's length.
#pragma once

#include <git2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::workspace::review {

inline constexpr std::uint32_t kModeFile = 0100644;
inline constexpr std::uint32_t kModeExecutable = 0100755;
inline constexpr std::uint32_t kModeSymlink = 0120000;

struct ManifestLimits {
  std::size_t max_entries = 200'000;
  std::uint64_t max_total_bytes = std::uint64_t(8) << 30;  // sum of claimed sizes
  std::uint64_t max_blob_bytes = std::uint64_t(64) << 20;  // one file
};

// One entry as the guest sent it, before validation.
struct ManifestEntry {
  std::string path;
  std::uint32_t mode = 0;
  std::string id;  // hex
  std::uint64_t size = 0;
};

// One accepted entry.
struct ManifestFile {
  std::string path;
  std::uint32_t mode = 0;  // kModeFile, kModeExecutable or kModeSymlink
  git_oid id{};
  std::uint64_t size = 0;
};

struct EntryRefusal {
  std::string path;    // printable() form of what the guest sent (or "entry #N" when it had none or an empty one)
  std::string reason;  // for a person: what is wrong with it
};

struct Manifest {
  std::vector<ManifestFile> files;     // sorted by path (byte order), no duplicates
  std::vector<EntryRefusal> refused;   // in the order the guest sent them
  std::uint64_t total_bytes = 0;       // sum of the accepted files' sizes
  // The exact paths of refused entries whose names are acceptable (refused for their mode, id,
  // size, or a clash with another entry), sorted and unique: the review keeps the snapshot's
  // version of each (keep_base_versions in keep_base.h), so a refusal never reads as a deletion.
  std::vector<std::string> refused_paths;
  bool guest_misbehaved() const { return !refused.empty(); }
};

// Validates entries; fails only for whole-manifest bounds (kLimitExceeded).
Result<Manifest> validate_manifest(std::vector<ManifestEntry> entries, const ManifestLimits& limits = {});

// Parses the JSON form and validates it. Fails for malformed JSON (kInvalidInput) and for more
// than max_entries entries, which it notices while parsing, before reading the rest.
Result<Manifest> parse_manifest_json(std::string_view json, const ManifestLimits& limits = {});

}  // namespace lockroom::workspace::review
