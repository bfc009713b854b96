// libgit2 initialisation and error text (see git_util.h).
#include "server/workspace/git_util.h"

#include <mutex>

namespace lockroom::workspace {

void ensure_libgit2() {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
}

std::string git_error_text(const std::string& what, int rc) {
  const git_error* e = git_error_last();
  std::string text = what + ": ";
  text += (e && e->message) ? e->message : ("libgit2 error " + std::to_string(rc));
  return text;
}

}  // namespace lockroom::workspace
