// `lockroom run`'s end-of-command review of workspace changes; see run_review.h.
#include "server/cli/run_review.h"

#include <unistd.h>

#include <fstream>
#include <iostream>

namespace lockroom::cli {

namespace {

namespace review = workspace::review;
using Mode = ReviewChoice::Mode;

void print_diffstat(const core::ChangeSet& set) {
  const auto& files = set.changes->list();
  std::size_t width = 0;
  for (const auto& f : files) width = std::max(width, f.path.size() + (f.old_path != f.path ? f.old_path.size() + 4 : 0));
  std::size_t added = 0, removed = 0;
  for (const auto& f : files) {
    std::string name = f.old_path != f.path ? f.old_path + " => " + f.path : f.path;
    std::string detail;
    if (f.binary) detail = "binary";
    else detail = std::to_string(f.added_lines + f.removed_lines) + " " + std::string(std::min<std::size_t>(f.added_lines, 40), '+') +
                  std::string(std::min<std::size_t>(f.removed_lines, 40), '-');
    if (f.old_mode && f.new_mode && f.old_mode != f.new_mode) detail += (f.new_mode == 0100755 ? " (now executable)" : " (mode changed)");
    std::cerr << " " << name << std::string(width > name.size() ? width - name.size() : 0, ' ') << " | " << detail << " ("
              << review::status_name(f.status) << ")\n";
    added += f.added_lines;
    removed += f.removed_lines;
  }
  std::cerr << " " << files.size() << " file" << (files.size() == 1 ? "" : "s") << " changed, " << added << " insertion"
            << (added == 1 ? "" : "s") << "(+), " << removed << " deletion" << (removed == 1 ? "" : "s") << "(-)\n";
  if (!set.refused.empty())
    std::cerr << "lockroom: the sandbox also reported " << set.refused.size()
              << " entries lockroom refused (e.g. " << set.refused.front().path << ": " << set.refused.front().reason << ")\n";
}

std::string ask(const std::string& question) {
  std::cerr << question << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return "";
  return answer;
}

int report_apply(const Result<std::vector<review::FileApplyResult>>& applied) {
  if (!applied) {
    std::cerr << "lockroom: cannot apply the changes: " << applied.error().message << "\n";
    return 1;
  }
  int problems = 0;
  for (const auto& f : *applied) {
    if (f.status == review::ApplyStatus::kApplied || f.status == review::ApplyStatus::kUnchanged) continue;
    std::cerr << "  " << review::apply_status_name(f.status) << ": " << f.path << (f.reason.empty() ? "" : " (" + f.reason + ")") << "\n";
    if (f.status == review::ApplyStatus::kConflict || f.status == review::ApplyStatus::kRefused) problems++;
  }
  std::cerr << "lockroom: applied " << applied->size() - problems << " of " << applied->size() << " files to the workspace";
  if (problems) std::cerr << "; " << problems << " left as they were (conflicts or refused)";
  std::cerr << "\n";
  return problems ? 1 : 0;
}

Result<std::vector<review::FileApplyResult>> apply(const core::ChangeSet& set, const core::SandboxWorkspace& ws, review::Selection selection) {
  const auto& c = *set.changes;
  return review::apply_worktree(c.store(), c.base_tree(), c.result_tree(), ws.host_path(), selection);
}

int save_patch(const core::ChangeSet& set, const std::filesystem::path& file) {
  auto diffs = set.changes->diff_all();
  if (!diffs) {
    std::cerr << "lockroom: cannot make the patch: " << diffs.error().message << "\n";
    return 1;
  }
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  for (const auto& d : *diffs) out << d.patch;
  out.close();
  if (!out) {
    std::cerr << "lockroom: cannot write " << file.string() << "\n";
    return 1;
  }
  std::cerr << "lockroom: the changes are in " << file.string() << " (apply them with `git apply " << file.string() << "`)\n";
  return 0;
}

int save_branch(const core::ChangeSet& set, const core::SandboxWorkspace& ws, const std::string& name) {
  const auto& base = ws.base();
  if (!base.is_git_repo || !base.repo_prefix.empty()) {
    std::cerr << "lockroom: branch mode needs the workspace to be a git repository's top folder\n";
    return 1;
  }
  review::BranchRequest request;
  request.repo_path = ws.host_path();
  if (base.user_head) git_oid_fromstr(&request.head_at_snapshot, base.user_head->c_str());
  request.name = name;
  const auto& c = *set.changes;
  auto outcome = review::apply_branch(c.store(), c.base_tree(), c.result_tree(), review::Selection::all(), request);
  if (!outcome) {
    std::cerr << "lockroom: cannot save the branch: " << outcome.error().message << "\n";
    return 1;
  }
  if (!outcome->created) {
    std::cerr << "lockroom: the branch was not created: conflicts with your HEAD in";
    for (const auto& p : outcome->conflicts) std::cerr << " " << p;
    std::cerr << "\n";
    return 1;
  }
  std::cerr << "lockroom: saved as " << outcome->ref_name.substr(std::string("refs/heads/").size())
            << " (your checkout is untouched; `git merge` or `git cherry-pick` it)\n";
  return 0;
}

// Shows each file's patch and asks whether to take it; applies the accepted ones.
int review_file_by_file(const core::ChangeSet& set, const core::SandboxWorkspace& ws) {
  std::vector<review::FileSelection> accepted;
  for (const auto& f : set.changes->list()) {
    auto diff = set.changes->diff(f.path);
    if (diff) std::cerr << (diff->patch.empty() ? "(binary or mode change: " + f.path + ")\n" : diff->patch);
    std::string a = ask("apply " + f.path + "? [y]es / [n]o / [q]uit: ");
    if (a == "q" || a.empty()) break;
    if (a == "y" || a == "yes") accepted.push_back({f.path, std::nullopt});
  }
  if (accepted.empty()) {
    std::cerr << "lockroom: nothing applied\n";
    return 0;
  }
  return report_apply(apply(set, ws, review::Selection::only(std::move(accepted))));
}

}  // namespace

int review_changes(const core::ChangeSet& set, const core::SandboxWorkspace& ws, const ReviewChoice& choice, bool interactive,
                   const std::filesystem::path& fallback_patch_dir, const std::string& sandbox_id) {
  if (set.changes->list().empty()) {
    std::cerr << "lockroom: no changes to the workspace\n";
    return 0;
  }
  std::cerr << "lockroom: changes to " << ws.host_path() << ":\n";
  print_diffstat(set);
  switch (choice.mode) {
    case Mode::kApply: return report_apply(apply(set, ws, review::Selection::all()));
    case Mode::kBranch: return save_branch(set, ws, choice.branch);
    case Mode::kPatch: return save_patch(set, choice.patch_file);
    case Mode::kDiscard: std::cerr << "lockroom: changes discarded\n"; return 0;
    case Mode::kAsk: break;
  }
  if (!interactive) return save_patch(set, fallback_patch_dir / (sandbox_id + ".patch"));
  for (;;) {
    std::string a = ask("[a]pply all / [r]eview file by file / save as [b]ranch / save a [p]atch / [d]iscard: ");
    if (a == "a") return report_apply(apply(set, ws, review::Selection::all()));
    if (a == "r") return review_file_by_file(set, ws);
    if (a == "b") return save_branch(set, ws, sandbox_id);
    if (a == "p" || a.empty()) return save_patch(set, fallback_patch_dir / (sandbox_id + ".patch"));
    if (a == "d") {
      std::cerr << "lockroom: changes discarded\n";
      return 0;
    }
  }
}

}  // namespace lockroom::cli
