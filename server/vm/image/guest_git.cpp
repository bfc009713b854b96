// git for the guest image; see guest_git.h.
#include "server/vm/image/guest_git.h"

#include "server/common/subprocess.h"
#include "server/vm/image/initramfs.h"
#include "server/vm/image/shared_libs.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

Result<GuestGit> find_guest_git() {
  auto path = find_program("git");
  if (!path) return make_error(ErrorCode::kUnavailable, "git is not installed; the guest image carries the host's git: sudo apt-get install git");
  GuestGit git;
  std::error_code ec;
  git.program = fs::canonical(*path, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot resolve " + path->string() + ": " + ec.message());
  auto libs = shared_libraries(git.program);
  if (!libs) return libs.error();
  git.libs = *libs;
  // `git init` copies its templates; without them it warns on every init. Hooks samples stay out.
  const fs::path host_templates = "/usr/share/git-core/templates";
  for (const char* file : {"description", "info/exclude"})
    if (fs::is_regular_file(host_templates / file)) git.templates.emplace_back(std::string(kGuestGitTemplates) + "/" + file, host_templates / file);
  return git;
}

std::string guest_gitconfig() {
  return "# The lockroom guest's system git configuration (written by lockroom's image builder).\n"
         "[user]\n"
         "\tname = lockroom sandbox\n"
         "\temail = sandbox@lockroom.invalid\n"
         "[safe]\n"
         "\tdirectory = *\n"
         "[init]\n"
         "\tdefaultBranch = main\n"
         "[core]\n"
         "\tpager = cat\n"
         "[gc]\n"
         "\tauto = 0\n"
         "[advice]\n"
         "\taddEmptyPathspec = false\n"
         "\taddIgnoredFile = false\n"
         "\tcommitBeforeMerge = false\n"
         "\tdetachedHead = false\n"
         "\timplicitIdentity = false\n"
         "\tresolveConflict = false\n"
         "\tstatusHints = false\n"
         "\twaitingForEditor = false\n";
}

Result<void> add_guest_git(CpioArchive& a, const GuestGit& git) {
  auto program = read_host_file(git.program);
  if (!program) return program.error();
  if (auto ok = a.add_file(kGuestGitPath, std::move(*program), 0755); !ok) return ok.error();
  if (auto ok = a.add_symlink("usr/lib/git-core/git", "../../bin/git"); !ok) return ok.error();
  if (auto ok = a.add_directory(std::string(kGuestGitTemplates) + "/branches"); !ok) return ok.error();
  for (const auto& [guest, host] : git.templates) {
    auto bytes = read_host_file(host);
    if (!bytes) return bytes.error();
    if (auto ok = a.add_file(guest, std::move(*bytes), 0644); !ok) return ok.error();
  }
  return a.add_file("etc/gitconfig", guest_gitconfig(), 0644);
}

}  // namespace lockroom::vm::image
