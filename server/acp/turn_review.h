// TurnReview: the review at the end of an ACP turn, in the editor's own permission UI.
//
// When the sandbox's files differ from what the user last accepted (lockroom's changes/list),
// the editor gets one `tool_call` (kind `edit`, "Apply 3 changed files from the sandbox") whose
// content is a `diff` per file — path absolute on the host, oldText the host file as it is now,
// newText the sandbox's version; binary and large files as a line of text — then a
// `session/request_permission` with allow_once / reject_once. Allow applies exactly the bytes
// shown (changes/apply with that listing's view id: lockroom's three-way merge, a conflict is
// reported and that file left alone); reject leaves the host untouched and the changes in the
// sandbox, offered again after the next turn. The outcome is told in a `tool_call_update`.
// Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/acp/lockroom_link.h"
#include "server/acp/path_map.h"
#include "server/rpc/connection.h"

namespace lockroom::acp {

// How a review ended.
enum class ReviewOutcome { kNothingChanged, kApplied, kPartlyApplied, kKept, kCancelled, kFailed };

class TurnReview {
 public:
  // Files larger than this are summarised instead of shown as a diff.
  static constexpr std::size_t kMaxDiffBytes = 1u << 20;
  // At most this many files are shown as diffs; the rest are named in a line of text.
  static constexpr std::size_t kMaxDiffFiles = 200;

  TurnReview(LockroomLink& link, rpc::Connection& editor, PathMap paths, std::string sandbox_id, std::string session_id,
             std::string tool_call_id);
  // Runs the review; `done` runs once with how it ended and a sentence for the log.
  void run(std::function<void(ReviewOutcome, std::string)> done);
  // The turn was cancelled: stop waiting for the editor's answer; nothing is applied.
  void cancel();

 private:
  struct File {
    std::string path, status, old_path;
    bool binary = false;
  };
  void fetch_contents(std::size_t next);
  void ask();
  void apply();
  void finish(ReviewOutcome outcome, const std::string& status, const std::string& text);
  json tool_call_content() const;

  LockroomLink& link_;
  rpc::Connection& editor_;
  PathMap paths_;
  std::string sandbox_id_, session_id_, tool_call_id_;
  std::string view_id_;
  std::vector<File> files_;
  json diffs_ = json::array();
  std::function<void(ReviewOutcome, std::string)> done_;
  bool finished_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The host file's bytes, or nullopt when it does not exist (or is not a regular file).
std::optional<std::string> read_host_file(const std::string& path, std::size_t max_bytes, bool* too_big);

}  // namespace lockroom::acp
