// Guest users; see guest_user.h.
#include "guest/guest_user.h"

#include <grp.h>
#include <sys/fsuid.h>
#include <unistd.h>

namespace lockroom::agent {

namespace {
bool switching = false;
}  // namespace

void enable_user_switching() { switching = true; }
bool user_switching() { return switching; }

const GuestUser& guest_user(const std::optional<std::string>& name) {
  if (!name) return default_user();
  return *name == kRootUser.name ? kRootUser : kAgentUser;
}

const GuestUser& default_user() { return switching ? kAgentUser : kRootUser; }

ActAs::ActAs(const GuestUser& user) {
  if (!switching || user.uid == 0) return;
  // The group first: once the fsuid is not root, changing the fsgid is no longer allowed.
  ::setfsgid(user.gid);
  ::setfsuid(user.uid);
  switched_ = true;
}

ActAs::~ActAs() {
  if (!switched_) return;
  ::setfsuid(0);
  ::setfsgid(0);
}

bool become_user(const GuestUser& user) {
  if (!switching || user.uid == 0) return true;
  return ::setgroups(0, nullptr) == 0 && ::setresgid(user.gid, user.gid, user.gid) == 0 &&
         ::setresuid(user.uid, user.uid, user.uid) == 0;
}

}  // namespace lockroom::agent
