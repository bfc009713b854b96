// WorkspaceWatch: inotify on every folder of a workspace, so a manifest looks only at the files
// that changed since the last one instead of an lstat of every file (~1 s for 8,000 files under
// TCG).
//
// Started when a workspace is first checked out. Every folder below the root is watched except
// `.git` folders, whose own inputs to the listing (.git/index, .git/config, .git/info/) are
// watched alone. A file written, truncated or chmod'ed is "dirty"; a file created, deleted or
// renamed is "touched" (the listing may differ by that name alone); anything else that can
// change which paths a manifest lists — a folder created, deleted or renamed, a .gitignore or a
// ".git" come, gone or edited, git's index, config or info/ touched — needs a "relist", and so
// does a lost event: the kernel queue overflowed, a watch could not be added (more than
// kMaxWatches folders, or the kernel's limit), or the root itself went. take() hands over what
// changed since the previous take(); after a loss it re-arms every watch first, so what happens
// during the full listing that follows is seen by the next one. More than kMaxDirty written
// files count as a loss too. drain() reads pending events; the agent's poll loop calls it
// whenever the descriptor is readable, so the kernel's queue rarely fills.
//
// Every event on a name is numbered (events()), and take() tells each path's latest number: a
// file hashed when events() was N is unchanged since if no event on it is numbered above N (how
// the agent trusts ids it computed early, workspace_eager_hash.h), as long as nothing was lost
// and the hash began after the watches were armed. take_closed() hands over the files closed
// after a write since the last call, the ones worth hashing early; take_seen() says whether
// anything at all was read since its last call (workspace.changed). Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace lockroom::agent {

class WorkspaceWatch {
 public:
  static constexpr std::size_t kMaxWatches = 20000;
  static constexpr std::size_t kMaxDirty = 50000;  // more written files than this: list everything
  static constexpr std::size_t kMaxClosed = 4096;  // closed files remembered between take_closed() calls

  explicit WorkspaceWatch(std::size_t max_dirty = kMaxDirty) : max_dirty_(max_dirty) {}
  ~WorkspaceWatch();
  WorkspaceWatch(const WorkspaceWatch&) = delete;
  WorkspaceWatch& operator=(const WorkspaceWatch&) = delete;

  // Watches `root` (an absolute path) and every folder below it. False when inotify is missing;
  // a watch that could not be added only marks the state lost (the next take() re-arms).
  bool start(const std::string& root);
  bool running() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // Reads every pending event without blocking.
  void drain();

  struct Changes {
    bool structural = true;        // the paths listed may differ
    bool relist = true;            // ... in a way only a whole listing tells (dirty and touched are then incomplete)
    bool lost = true;              // events were lost since the previous take(): last_event vouches for nothing
    std::uint64_t watching_since = 0;  // the event number when the watches were (re)armed: before it nothing is known
    std::set<std::string> dirty;   // workspace-relative paths of files written since
    std::set<std::string> touched; // ... and of files created, deleted or renamed (from or to), when not relist
    std::unordered_map<std::string, std::uint64_t> last_event;  // path -> number of its latest event since
  };
  // What changed since the previous take() (or start()); the next take() starts from now.
  Changes take();

  // How many events on names were read so far (the number of the latest).
  std::uint64_t events() const { return events_; }
  // Files closed after a write since the previous call (at most kMaxClosed, oldest first).
  std::vector<std::string> take_closed();
  // Whether any event (or a loss) was read since the previous call: what workspace.changed tells.
  bool take_seen() {
    bool seen = seen_;
    seen_ = false;
    return seen;
  }

  std::size_t watches() const { return dirs_.size(); }

 private:
  void add_tree(const std::string& rel);  // rel: "" or "a/b/"
  void add_git_dir(const std::string& rel);
  void stop();

  std::size_t max_dirty_;
  std::string root_;
  int fd_ = -1;
  std::unordered_map<int, std::string> dirs_;  // watch descriptor -> folder, "" or ending in '/'
  std::unordered_map<int, bool> git_dirs_;     // watch descriptors on .git folders (any event is structural)
  bool lost_ = false;
  std::uint64_t watching_since_ = 0;
  bool structural_ = false;
  bool relist_ = false;
  std::set<std::string> dirty_;
  std::set<std::string> touched_;
  std::uint64_t events_ = 0;
  std::unordered_map<std::string, std::uint64_t> last_event_;
  std::vector<std::string> closed_;
  bool seen_ = false;
};

}  // namespace lockroom::agent
