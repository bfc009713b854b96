// The JSON form of a snapshot result (see snapshot.h).
#include "server/workspace/snapshot/snapshot.h"

namespace lockroom::workspace::snapshot {

nlohmann::json to_json(const SnapshotResult& result) {
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : result.skipped) skipped.push_back({{"path", s.path}, {"reason", s.reason}});
  nlohmann::json out = {
      {"snapshotId", result.snapshot_id},
      {"commit", result.commit_id},
      {"tree", result.tree_id},
      {"isGitRepo", result.is_git_repo},
      {"repoPrefix", result.repo_prefix},
      {"fileCount", result.file_count},
      {"totalBytes", result.total_bytes},
      {"filesRead", result.files_read},
      {"withheld", result.withheld},
      {"skipped", std::move(skipped)},
      {"timings", {{"scanMs", result.timings.scan_ms}, {"storeMs", result.timings.store_ms}}},
  };
  if (result.user_head) out["userHead"] = *result.user_head;
  if (result.branch) out["branch"] = *result.branch;
  return out;
}

}  // namespace lockroom::workspace::snapshot
