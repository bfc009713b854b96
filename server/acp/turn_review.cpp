// TurnReview; see turn_review.h.
#include "server/acp/turn_review.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "protocol/channel/base64.h"

namespace lockroom::acp {

namespace {

constexpr auto kAskTimeout = std::chrono::hours(24);  // the user decides; the turn waits

json text_content(const std::string& text) { return json{{"type", "content"}, {"content", {{"type", "text"}, {"text", text}}}}; }

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

std::string plural(std::size_t n, const std::string& one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); }

}  // namespace

std::optional<std::string> read_host_file(const std::string& path, std::size_t max_bytes, bool* too_big) {
  if (too_big) *too_big = false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    if (too_big) *too_big = true;
    return std::string();
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TurnReview::TurnReview(LockroomLink& link, rpc::Connection& editor, PathMap paths, std::string sandbox_id, std::string session_id,
                       std::string tool_call_id)
    : link_(link),
      editor_(editor),
      paths_(std::move(paths)),
      sandbox_id_(std::move(sandbox_id)),
      session_id_(std::move(session_id)),
      tool_call_id_(std::move(tool_call_id)) {}

void TurnReview::run(std::function<void(ReviewOutcome, std::string)> done) {
  done_ = std::move(done);
  link_.call("changes/list", json{{"sandboxId", sandbox_id_}}, std::chrono::minutes(10),
             [this, alive = std::weak_ptr<bool>(alive_)](LinkAnswer answer) {
               if (alive.expired() || finished_) return;
               if (!answer.ok()) return finish(ReviewOutcome::kFailed, "", "the sandbox's changes could not be listed: " + answer.error->message);
               view_id_ = answer.result.value("viewId", "");
               for (const json& f : answer.result.value("files", json::array())) {
                 File file;
                 file.path = f.value("path", "");
                 file.status = f.value("status", "");
                 file.old_path = f.value("oldPath", "");
                 file.binary = f.value("binary", false);
                 files_.push_back(std::move(file));
               }
               if (files_.empty()) return finish(ReviewOutcome::kNothingChanged, "", "");
               fetch_contents(0);
             });
}

// One diff entry per file, in order, each with the sandbox's bytes of this view.
void TurnReview::fetch_contents(std::size_t next) {
  if (next >= files_.size() || next >= kMaxDiffFiles) {
    if (files_.size() > kMaxDiffFiles)
      diffs_.push_back(text_content(plural(files_.size() - kMaxDiffFiles, "more changed file") + " not shown here (see `lockroom diff " +
                                    sandbox_id_ + "`); they are applied with the rest"));
    return ask();
  }
  const File& file = files_[next];
  std::string host_path = paths_.host_root() + "/" + file.path;
  std::string old_host = paths_.host_root() + "/" + (file.old_path.empty() ? file.path : file.old_path);
  bool old_too_big = false;
  auto old_text = read_host_file(old_host, kMaxDiffBytes, &old_too_big);
  auto summary = [&](const std::string& why) { diffs_.push_back(text_content(file.path + ": " + why)); };
  if (file.binary) {
    summary(file.status + " (binary file)");
    return fetch_contents(next + 1);
  }
  if (old_too_big || (old_text && !valid_utf8(*old_text))) {
    summary(file.status + " (the host's version is " + (old_too_big ? "over 1 MiB" : "not UTF-8 text") + ")");
    return fetch_contents(next + 1);
  }
  if (file.status == "deleted") {
    diffs_.push_back(json{{"type", "diff"}, {"path", host_path}, {"oldText", old_text ? json(*old_text) : json(nullptr)}, {"newText", ""}});
    diffs_.push_back(text_content(file.path + ": deleted in the sandbox"));
    return fetch_contents(next + 1);
  }
  json params{{"sandboxId", sandbox_id_}, {"path", file.path}, {"viewId", view_id_}};
  link_.call("changes/content", params, std::chrono::minutes(5),
             [this, next, host_path, old_text, alive = std::weak_ptr<bool>(alive_)](LinkAnswer answer) {
               if (alive.expired() || finished_) return;
               const File& file = files_[next];
               if (!answer.ok()) {
                 diffs_.push_back(text_content(file.path + ": " + file.status + " (its content could not be read: " + answer.error->message + ")"));
               } else if (answer.result.contains("dataEncoding") || answer.result.value("binary", false)) {
                 diffs_.push_back(text_content(file.path + ": " + file.status + " (not UTF-8 text)"));
               } else {
                 std::string text = answer.result.value("data", "");
                 if (text.size() > kMaxDiffBytes) {
                   diffs_.push_back(text_content(file.path + ": " + file.status + " (over 1 MiB)"));
                 } else {
                   json diff{{"type", "diff"}, {"path", host_path}, {"newText", std::move(text)}};
                   diff["oldText"] = old_text ? json(*old_text) : json(nullptr);
                   diffs_.push_back(std::move(diff));
                   if (!file.old_path.empty()) diffs_.push_back(text_content(file.path + ": renamed from " + file.old_path));
                 }
               }
               fetch_contents(next + 1);
             });
}

json TurnReview::tool_call_content() const { return diffs_; }

void TurnReview::ask() {
  std::string title = "Apply " + plural(files_.size(), "changed file") + " from the sandbox";
  json locations = json::array();
  json paths = json::array();
  for (const File& f : files_) {
    locations.push_back(json{{"path", paths_.host_root() + "/" + f.path}});
    paths.push_back(f.path);
  }
  json call{{"sessionUpdate", "tool_call"}, {"toolCallId", tool_call_id_}, {"title", title}, {"kind", "edit"}, {"status", "pending"},
            {"content", tool_call_content()}, {"locations", locations},
            {"rawInput", {{"sandboxId", sandbox_id_}, {"viewId", view_id_}, {"files", paths}}}};
  editor_.notify("session/update", json{{"sessionId", session_id_}, {"update", call}});
  json options = json::array({json{{"optionId", "apply"}, {"name", "Apply to my files"}, {"kind", "allow_once"}},
                              json{{"optionId", "keep"}, {"name", "Keep in the sandbox"}, {"kind", "reject_once"}}});
  json ask{{"sessionId", session_id_},
           {"toolCall", {{"toolCallId", tool_call_id_}, {"title", title}, {"kind", "edit"}, {"status", "pending"}}},
           {"options", options}};
  editor_.dispatcher().call("session/request_permission", ask, kAskTimeout,
                            [this, alive = std::weak_ptr<bool>(alive_)](rpc::CallOutcome outcome) {
                              if (alive.expired() || finished_) return;
                              if (outcome.error)
                                return finish(ReviewOutcome::kKept, "failed",
                                              "Not applied (the editor did not answer: " + outcome.error->message +
                                                  "). The changes stay in the sandbox and are offered again after the next turn.");
                              const json& o = outcome.result.is_object() ? outcome.result.value("outcome", json::object()) : json::object();
                              if (o.value("outcome", "") == "selected" && o.value("optionId", "") == "apply") return apply();
                              if (o.value("outcome", "") == "cancelled") return finish(ReviewOutcome::kCancelled, "failed", "Not applied: the turn was cancelled.");
                              finish(ReviewOutcome::kKept, "failed",
                                     "Not applied: your files are unchanged. The changes stay in the sandbox and are offered again after the next turn.");
                            });
}

void TurnReview::apply() {
  link_.call("changes/apply", json{{"sandboxId", sandbox_id_}, {"viewId", view_id_}}, std::chrono::minutes(10),
             [this, alive = std::weak_ptr<bool>(alive_)](LinkAnswer answer) {
               if (alive.expired() || finished_) return;
               if (!answer.ok()) return finish(ReviewOutcome::kFailed, "failed", "Not applied: " + answer.error->message);
               std::size_t written = 0;
               std::string problems;
               for (const json& f : answer.result.value("files", json::array())) {
                 std::string status = f.value("status", "");
                 std::string path = f.value("path", "");
                 if (status == "applied" || status == "merged" || status == "unchanged") {
                   ++written;
                 } else if (status == "conflict") {
                   problems += "\n- " + path + ": conflicts with your own edit of it; your file was left as it is";
                 } else {
                   problems += "\n- " + path + ": " + status + (f.contains("reason") ? " (" + f.value("reason", "") + ")" : "");
                 }
               }
               if (problems.empty()) return finish(ReviewOutcome::kApplied, "completed", "Applied " + plural(written, "file") + " to your workspace.");
               finish(ReviewOutcome::kPartlyApplied, "failed",
                      "Applied " + plural(written, "file") + "; not applied:" + problems +
                          "\nWhat was not applied stays in the sandbox and is offered again after the next turn.");
             });
}

void TurnReview::cancel() {
  if (finished_ || files_.empty()) {
    if (!finished_) finish(ReviewOutcome::kCancelled, "", "");
    return;
  }
  finish(ReviewOutcome::kCancelled, "failed", "Not applied: the turn was cancelled.");
}

void TurnReview::finish(ReviewOutcome outcome, const std::string& status, const std::string& text) {
  if (finished_) return;
  finished_ = true;
  if (!status.empty()) {
    json content = tool_call_content();
    content.push_back(text_content(text));
    json update{{"sessionUpdate", "tool_call_update"}, {"toolCallId", tool_call_id_}, {"status", status}, {"content", content}};
    editor_.notify("session/update", json{{"sessionId", session_id_}, {"update", update}});
  }
  if (!text.empty()) spdlog::info("sandbox {}: review: {}", sandbox_id_, text);
  if (auto done = std::move(done_)) done(outcome, text);
}

}  // namespace lockroom::acp
