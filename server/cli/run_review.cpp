// `lockroom run`'s end-of-command review of workspace changes; see run_review.h.
#include "server/cli/run_review.h"

#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "server/api/control_review.h"

namespace lockroom::cli {

namespace {

namespace review = workspace::review;
using Mode = ReviewChoice::Mode;

constexpr std::size_t kMaxAnswerBytes = 256;

std::string plural(std::size_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string mode_text(std::uint32_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%06o", mode);
  return text;
}

// git's --stat, then its --summary lines (created, deleted, renamed files and mode changes).
void print_diffstat(const core::ChangeSet& set, const ReviewContext& context) {
  std::ostream& out = *context.out;
  std::vector<api::StatLine> lines;
  std::string summary;
  for (const auto& f : set.changes->list()) {
    bool renamed = f.old_path != f.path;
    lines.push_back({renamed ? f.old_path + " => " + f.path : f.path, f.added_lines, f.removed_lines, f.binary});
    if (f.status == review::ChangeStatus::kAdded) summary += " create mode " + mode_text(f.new_mode) + " " + f.path + "\n";
    else if (f.status == review::ChangeStatus::kDeleted) summary += " delete mode " + mode_text(f.old_mode) + " " + f.path + "\n";
    else if (renamed) summary += " rename " + f.old_path + " => " + f.path + "\n";
    if (f.old_mode && f.new_mode && f.old_mode != f.new_mode)
      summary += " mode change " + mode_text(f.old_mode) + " => " + mode_text(f.new_mode) + " " + f.path + "\n";
  }
  out << api::format_diffstat(lines, context.color) << summary;
  if (!set.refused.empty())
    out << "lockroom: the sandbox also reported " << set.refused.size() << (set.refused.size() == 1 ? " entry" : " entries")
        << " lockroom refused (e.g. " << set.refused.front().path << ": " << set.refused.front().reason << ")\n";
}

// Asks on the terminal; nothing at end of input.
std::optional<std::string> ask(const ReviewContext& context, const std::string& question) {
  *context.out << question << std::flush;
  auto answer = read_answer(context.answers_fd);
  if (!answer) *context.out << "\n";
  return answer;
}

// Saves the patch of `paths` (every change when empty) where the user asked, or in the patches
// folder. False when it could not be written (the reason printed).
bool save_patch(const core::ChangeSet& set, const std::vector<std::string>& paths, const std::filesystem::path& file,
                const ReviewContext& context, const std::string& what) {
  auto patch = set.changes->patch_for_git_apply(paths);
  if (!patch) {
    *context.out << "lockroom: cannot make the patch: " << patch.error().message << "\n";
    return false;
  }
  return save_patch_text(*patch, file, context, what);
}

// The last resort whenever something was not applied: the patches folder.
void save_fallback(const core::ChangeSet& set, const std::vector<std::string>& paths, const ReviewContext& context,
                   const std::string& what) {
  save_patch(set, paths, fallback_patch_file(context), context, what);
}

// Applies `selection` to the host workspace and reports per file. Whatever was not written
// (conflicts, refusals, or everything when the apply failed) is saved as a patch, in one file
// with the `declined` ones (files the user chose not to take). 0, or 1 when something chosen was
// not written.
int apply_to_host(const core::ChangeSet& set, review::Selection selection, const ReviewContext& context,
                  const std::vector<std::string>& declined = {}) {
  std::ostream& out = *context.out;
  const auto& c = *set.changes;
  auto applied = review::apply_worktree(c.store(), c.base_tree(), c.result_tree(), context.host_path, selection);
  if (!applied) {
    out << "lockroom: cannot apply the changes: " << applied.error().message << "\n";
    std::vector<std::string> unapplied = declined;
    for (const auto& f : selection.files) unapplied.push_back(f.path);
    save_fallback(set, selection.everything ? std::vector<std::string>{} : unapplied, context, "the changes");
    return 1;
  }
  std::vector<std::string> left;
  for (const auto& f : *applied) {
    if (f.status == review::ApplyStatus::kApplied || f.status == review::ApplyStatus::kUnchanged) continue;
    out << "  " << review::apply_status_name(f.status) << ": " << f.path << (f.reason.empty() ? "" : " (" + f.reason + ")") << "\n";
    if (f.status == review::ApplyStatus::kConflict || f.status == review::ApplyStatus::kRefused) left.push_back(f.path);
  }
  out << "lockroom: applied " << applied->size() - left.size() << " of " << applied->size() << " files to the workspace";
  if (!left.empty()) out << "; " << left.size() << " left as they were (conflicts or refused)";
  out << "\n";
  if (left.empty() && declined.empty()) return 0;
  std::string what = left.empty() ? "the " + plural(declined.size(), "file") + " you did not take"
                     : declined.empty() ? "the " + plural(left.size(), "file") + " not applied"
                                        : "the " + plural(left.size() + declined.size(), "file") + " not applied or not taken";
  std::vector<std::string> unapplied = left;
  unapplied.insert(unapplied.end(), declined.begin(), declined.end());
  save_fallback(set, unapplied, context, what);
  return left.empty() ? 0 : 1;
}

// Commits every change to lockroom/<name>. False (the reason printed) when no branch was made.
bool save_branch(const core::ChangeSet& set, const std::string& name, const ReviewContext& context) {
  std::ostream& out = *context.out;
  const auto* base = context.base;
  if (!base || !base->is_git_repo || !base->repo_prefix.empty()) {
    out << "lockroom: cannot save a branch: " << context.host_path
        << (base && base->is_git_repo ? " is a subfolder of its git repository; branch mode needs the repository's top folder\n"
                                      : " is not a git repository\n");
    return false;
  }
  review::BranchRequest request;
  request.repo_path = context.host_path;
  if (base->user_head) git_oid_fromstr(&request.head_at_snapshot, base->user_head->c_str());
  request.name = name;
  request.kept_out = base->kept_out();
  const auto& c = *set.changes;
  auto outcome = review::apply_branch(c.store(), c.base_tree(), c.result_tree(), review::Selection::all(), request);
  if (!outcome) {
    out << "lockroom: cannot save the branch: " << outcome.error().message << "\n";
    return false;
  }
  std::string branch = outcome->ref_name.substr(std::string("refs/heads/").size());
  out << "lockroom: saved as " << branch << " (your checkout is untouched; `git merge " << branch << "` or `git cherry-pick` it)\n";
  if (outcome->snapshot_commit)
    out << "lockroom: the commit below it holds your uncommitted and untracked files as they were copied in; `git show "
        << branch << "` is the sandbox's work alone\n";
  return true;
}

// Shows each file's patch and asks whether to take it; applies the accepted ones. The files not
// taken are saved as a patch, so nothing is lost by answering no.
int review_file_by_file(const core::ChangeSet& set, const ReviewContext& context) {
  std::ostream& out = *context.out;
  std::vector<review::FileSelection> accepted;
  std::vector<std::string> declined;
  const auto& files = set.changes->list();
  std::size_t next = 0;
  for (; next < files.size(); ++next) {
    const auto& f = files[next];
    auto diff = set.changes->diff(f.path);
    if (diff) out << (diff->patch.empty() ? "(binary or mode change: " + f.path + ")\n" : diff->patch);
    std::optional<std::string> answer;
    for (;;) {
      answer = ask(context, "apply " + f.path + "? [y]es / [n]o / [q]uit: ");
      if (!answer || *answer == "y" || *answer == "yes" || *answer == "n" || *answer == "no" || *answer == "q" || *answer == "quit")
        break;
    }
    if (!answer || answer->front() == 'q') break;
    if (answer->front() == 'y') accepted.push_back({f.path, std::nullopt});
    else declined.push_back(f.path);
  }
  for (; next < files.size(); ++next) declined.push_back(files[next].path);
  if (!accepted.empty()) return apply_to_host(set, review::Selection::only(std::move(accepted)), context, declined);
  out << "lockroom: nothing applied\n";
  save_fallback(set, declined, context, "the " + plural(declined.size(), "file") + " you did not take");
  return 0;
}

int menu(const core::ChangeSet& set, const ReviewContext& context) {
  std::ostream& out = *context.out;
  // What was typed while the command ran was meant for it, not for this menu.
  if (isatty(context.answers_fd)) tcflush(context.answers_fd, TCIFLUSH);
  for (;;) {
    auto answer = ask(context, "[a]pply all / [r]eview file by file / save as [b]ranch / save a [p]atch / [d]iscard: ");
    if (!answer) {  // end of input: nobody is there to answer
      save_fallback(set, {}, context, "the changes");
      return 0;
    }
    if (*answer == "a") return apply_to_host(set, review::Selection::all(), context);
    if (*answer == "r") return review_file_by_file(set, context);
    if (*answer == "b") {
      if (save_branch(set, context.sandbox_id, context)) return 0;
      save_fallback(set, {}, context, "the changes");
      out << "lockroom: choose again, or [d]iscard (the patch stays)\n";
      continue;
    }
    if (*answer == "p") {
      if (save_patch(set, {}, fallback_patch_file(context), context, "the changes")) return 0;
      continue;
    }
    if (*answer == "d") {
      out << "lockroom: changes discarded\n";
      return 0;
    }
  }
}

}  // namespace

std::filesystem::path fallback_patch_file(const ReviewContext& context) {
  return context.patch_dir / (context.sandbox_id + ".patch");
}

bool save_patch_text(const std::string& patch, const std::filesystem::path& file, const ReviewContext& context,
                     const std::string& what) {
  std::ostream& out = *context.out;
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream stream(file, std::ios::binary | std::ios::trunc);
  stream << patch;
  stream.close();
  if (!stream) {
    out << "lockroom: cannot write the patch to " << file.string() << ": " << std::strerror(errno) << "\n";
    return false;
  }
  std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  std::string directory;
  if (context.base && context.base->is_git_repo && !context.base->repo_prefix.empty()) {
    std::string prefix = context.base->repo_prefix;
    if (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    directory = " --directory=" + prefix;
  }
  out << "lockroom: saved " << what << " in " << absolute.string() << "\n"
      << "  apply with: cd " << context.host_path << " && git apply" << directory << " " << absolute.string() << "\n"
      << "  (for files you have changed since, add --3way in a git repository, or --reject)\n";
  return true;
}

std::optional<std::string> read_answer(int fd) {
  std::string line;
  bool any = false;
  for (;;) {
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n == 1) {
      any = true;
      if (c == '\n') break;
      if (line.size() < kMaxAnswerBytes) line += c;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd wait{fd, POLLIN, 0};
      if (::poll(&wait, 1, -1) < 0 && errno != EINTR) return std::nullopt;
      continue;
    }
    if (!any) return std::nullopt;  // end of input, or the terminal is gone (EIO)
    break;
  }
  auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!line.empty() && blank(line.back())) line.pop_back();
  std::size_t start = 0;
  while (start < line.size() && blank(line[start])) ++start;
  line.erase(0, start);
  std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
  return line;
}

int review_changes(const core::ChangeSet& set, const ReviewChoice& choice, const ReviewContext& context) {
  std::ostream& out = *context.out;
  if (set.changes->list().empty()) {
    out << "lockroom: no changes to the workspace\n";
    return 0;
  }
  out << "lockroom: changes to " << context.host_path << ":\n";
  print_diffstat(set, context);
  switch (choice.mode) {
    case Mode::kApply: return apply_to_host(set, review::Selection::all(), context);
    case Mode::kBranch:
      if (save_branch(set, choice.branch, context)) return 0;
      save_fallback(set, {}, context, "the changes");
      return 1;
    case Mode::kPatch:
      if (save_patch(set, {}, choice.patch_file, context, "the changes")) return 0;
      save_fallback(set, {}, context, "the changes");
      return 1;
    case Mode::kDiscard: out << "lockroom: changes discarded\n"; return 0;
    case Mode::kAsk: break;
  }
  if (context.answers_fd < 0) {
    save_fallback(set, {}, context, "the changes");
    return 0;
  }
  return menu(set, context);
}

}  // namespace lockroom::cli
