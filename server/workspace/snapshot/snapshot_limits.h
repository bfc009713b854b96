// Size limits for a workspace snapshot and the error text that names what to ignore. Pure logic:
// the scanner lists the selected files with their sizes, this decides whether they fit, before a
// single byte is copied into the store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace lockroom::workspace::snapshot {

struct SnapshotLimits {
  std::uint64_t max_files = 200'000;
  std::uint64_t max_total_bytes = 512ull << 20;  // 512 MiB
  std::uint64_t max_file_bytes = 64ull << 20;    // 64 MiB
};

struct SizedPath {
  std::string path;  // workspace-relative
  std::uint64_t bytes = 0;
};

// kLimitExceeded when a limit is broken; the message names the biggest offenders (the largest
// files for the byte limits, the directories holding the most files for the count limit) and
// says what to do. The single-file limit is checked first, then the count, then the total.
// `scan_stopped_early`: `files` is only the part of the workspace seen before the scan stopped.
Result<void> check_limits(const std::vector<SizedPath>& files, const SnapshotLimits& limits,
                          bool scan_stopped_early = false);

// "1.5 MiB", "812 bytes": sizes as people read them.
std::string human_bytes(std::uint64_t bytes);

}  // namespace lockroom::workspace::snapshot
