// Who a guest program runs as.
//
// In a guest the agent is root (PID 1) and starts programs as the unprivileged `agent` user
// (uid 1000) unless a request asks for root. That user owns /workspace and /home/agent, so what
// the agent itself writes there (git's checkouts and index, packs, file.write) is made as that
// user too, and everything it runs in the workspace (git reads the workspace's own .git/config,
// which the guest controls) runs without privileges. The agent, its channel, the cgroup limits
// and the tmpfs size stay root's. Outside a guest (the agent under test on a host) nobody is
// switched: every program runs as the agent's own user.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace lockroom::agent {

struct GuestUser {
  uid_t uid;
  gid_t gid;
  const char* name;
  const char* home;
};

inline constexpr GuestUser kAgentUser{1000, 1000, "agent", "/home/agent"};
inline constexpr GuestUser kRootUser{0, 0, "root", "/root"};

// Turns switching on (PID 1 in a guest, once at start).
void enable_user_switching();
bool user_switching();

// The user a request names: "agent" -> kAgentUser, "root" -> kRootUser, absent -> default_user().
// Names are checked by the channel's parsers; anything else is the agent user.
const GuestUser& guest_user(const std::optional<std::string>& name);

// The user programs run as when a request does not say: kAgentUser when switching, else the
// agent's own (kRootUser stands for "no change").
const GuestUser& default_user();

// For the lifetime of this object, the calling thread's file system accesses (open, mkdir,
// rename...) are checked as `user`'s, and what it creates belongs to that user (setfsuid and
// setfsgid). A no-op when switching is off or `user` is root.
class ActAs {
 public:
  explicit ActAs(const GuestUser& user);
  ~ActAs();
  ActAs(const ActAs&) = delete;
  ActAs& operator=(const ActAs&) = delete;

 private:
  bool switched_ = false;
};

// In a forked child before exec: drop to `user` for good (supplementary groups, gid, uid, all
// three of each). Async-signal-safe; false with errno set when it could not. A no-op (true) when
// switching is off or `user` is root.
bool become_user(const GuestUser& user);

}  // namespace lockroom::agent
