// WorkspaceWatch; see workspace_watch.h.
#include "guest/workspace_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace lockroom::agent {

namespace {

constexpr std::uint32_t kFolderEvents = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                        IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;
constexpr std::uint32_t kGitEvents = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_ONLYDIR | IN_DONT_FOLLOW;

}  // namespace

WorkspaceWatch::~WorkspaceWatch() { stop(); }

void WorkspaceWatch::stop() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  dirs_.clear();
  git_dirs_.clear();
}

bool WorkspaceWatch::start(const std::string& root) {
  stop();
  root_ = root;
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) return false;
  lost_ = false;
  watching_since_ = events_;  // what happened before is unknown
  structural_ = relist_ = true;  // what happened before the watches were in place is unknown
  dirty_.clear();
  touched_.clear();
  last_event_.clear();
  closed_.clear();
  add_tree("");
  add_git_dir(".git/");
  add_git_dir(".git/info/");
  return true;
}

void WorkspaceWatch::add_git_dir(const std::string& rel) {
  int wd = ::inotify_add_watch(fd_, (root_ + "/" + rel).c_str(), kGitEvents);
  if (wd >= 0) git_dirs_[wd] = true;
  else if (errno != ENOENT) lost_ = true;
}

void WorkspaceWatch::add_tree(const std::string& rel) {
  // Iterative: a deep tree must not exhaust the agent's stack.
  std::vector<std::string> pending{rel};
  while (!pending.empty() && !lost_) {
    std::string dir = std::move(pending.back());
    pending.pop_back();
    if (dirs_.size() >= kMaxWatches) {
      lost_ = true;
      return;
    }
    std::string abs = dir.empty() ? root_ : root_ + "/" + dir.substr(0, dir.size() - 1);
    int wd = ::inotify_add_watch(fd_, abs.c_str(), kFolderEvents);
    if (wd < 0) {
      if (errno != ENOENT && errno != ENOTDIR) lost_ = true;  // ENOSPC: the kernel's limit
      continue;
    }
    dirs_[wd] = dir;
    // Listed after the watch is in place: a folder made meanwhile is seen one way or the other.
    DIR* d = ::opendir(abs.c_str());
    if (!d) continue;
    while (const dirent* de = ::readdir(d)) {
      const char* name = de->d_name;
      if (!std::strcmp(name, ".") || !std::strcmp(name, "..") || !std::strcmp(name, ".git")) continue;
      bool is_dir = de->d_type == DT_DIR;
      if (de->d_type == DT_UNKNOWN) {
        struct stat st{};
        is_dir = ::fstatat(::dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      if (is_dir) pending.push_back(dir + name + "/");
    }
    ::closedir(d);
  }
}

void WorkspaceWatch::drain() {
  if (fd_ < 0) return;
  alignas(inotify_event) char buf[64 << 10];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN: nothing more
    seen_ = true;
    for (char* p = buf; p < buf + n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        lost_ = true;
        events_++;  // whatever was lost happened before the events that follow
        continue;
      }
      if (git_dirs_.count(ev->wd)) {
        if (ev->mask & IN_IGNORED) git_dirs_.erase(ev->wd);
        structural_ = relist_ = true;  // the index, config or an exclude file: what is listed may differ
        continue;
      }
      auto it = dirs_.find(ev->wd);
      if (it == dirs_.end()) continue;
      if (ev->mask & IN_IGNORED) {  // the folder went (its parent saw IN_DELETE)
        if (it->second.empty()) lost_ = true;
        dirs_.erase(it);
        continue;
      }
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        structural_ = relist_ = true;
        if (it->second.empty()) lost_ = true;  // the workspace itself
        continue;
      }
      std::string name = ev->len ? std::string(ev->name) : std::string();
      if (!name.empty()) {
        std::string path = it->second + name;
        ++events_;
        if (!lost_) last_event_[path] = events_;  // once lost, nothing is vouched for until the re-arm
        if (last_event_.size() > max_dirty_) {
          lost_ = true;
          last_event_.clear();
        }
        if ((ev->mask & IN_CLOSE_WRITE) && !(ev->mask & IN_ISDIR) && closed_.size() < kMaxClosed) closed_.push_back(std::move(path));
      }
      if (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) {
        structural_ = true;
        if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && name != ".git") add_tree(it->second + name + "/");
        // A file come or gone is named; a folder, an ignore file or a ".git" (a nested
        // repository's) changes what git lists around it: only a whole listing can tell.
        if ((ev->mask & IN_ISDIR) || name == ".gitignore" || name == ".git" || touched_.size() >= max_dirty_) {
          relist_ = true;
        } else if (!lost_ && !relist_) {
          touched_.insert(it->second + name);
        }
        continue;
      }
      if (name.empty() || (ev->mask & IN_ISDIR)) continue;  // a folder's own mode or times
      if (name == ".gitignore") structural_ = relist_ = true;
      if (dirty_.size() >= max_dirty_) {
        lost_ = true;  // a full listing costs less than remembering more
        dirty_.clear();
        continue;
      }
      if (!lost_) dirty_.insert(it->second + name);
    }
  }
}

WorkspaceWatch::Changes WorkspaceWatch::take() {
  drain();
  Changes out;
  out.structural = structural_ || lost_ || fd_ < 0;
  out.relist = relist_ || lost_ || fd_ < 0;
  out.lost = lost_ || fd_ < 0;
  out.watching_since = watching_since_;
  out.dirty = std::move(dirty_);
  if (!out.relist) out.touched = std::move(touched_);
  out.last_event = std::move(last_event_);
  dirty_.clear();
  touched_.clear();
  last_event_.clear();
  structural_ = relist_ = false;
  if (lost_ && fd_ >= 0) {
    start(root_);  // re-armed before the full listing that follows, which covers the gap
    structural_ = relist_ = false;
  }
  return out;
}

std::vector<std::string> WorkspaceWatch::take_closed() {
  std::vector<std::string> out = std::move(closed_);
  closed_.clear();
  return out;
}

}  // namespace lockroom::agent
