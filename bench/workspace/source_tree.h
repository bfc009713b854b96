// bench/workspace: the tree the workspace benchmark works on — a copy of a real source tree
// committed into a temporary git repository — and what the benchmark does to it on the host:
// edits, the `git clone --local` peer, the tarball stream of the tar peer. Blocking; main thread.
// Failures throw std::runtime_error naming the command: this is a benchmark's setup, not a server.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace lockroom::bench {

std::string shell_quote(std::string_view text);
// Runs `command` with /bin/sh; throws when it exits non-zero. sh_out returns its stdout.
void sh(const std::string& command);
std::string sh_out(const std::string& command);

// A new directory under $TMPDIR (or /tmp), removed with everything in it when this goes.
class TempDir {
 public:
  explicit TempDir(const char* prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class SourceRepo {
 public:
  // Copies `source` (without any .git folder) into a temporary directory and commits it all
  // with git (identity and config of its own, nothing from the machine's).
  explicit SourceRepo(const std::filesystem::path& source);
  const std::filesystem::path& dir() const { return dir_.path(); }
  // Committed regular files, repository-relative, in git's order; their count and total bytes.
  const std::vector<std::string>& files() const { return files_; }
  std::uint64_t total_bytes() const { return total_bytes_; }

  // Appends `line` to each of `paths` (repository-relative).
  void append(const std::vector<std::string>& paths, const std::string& line) const;
  // `git clone --local` of the repository into a fresh directory (removed after): milliseconds.
  double clone_local_ms() const;
  // A `tar c` of the files (not .git) writing to the returned stream; close it with pclose.
  FILE* open_tar_stream() const;

 private:
  TempDir dir_{"lockroom-bench-ws"};
  std::vector<std::string> files_;
  std::uint64_t total_bytes_ = 0;
};

// `count` paths spread evenly over `files` (every files.size()/count-th), for edits.
std::vector<std::string> spread(const std::vector<std::string>& files, std::size_t count);

}  // namespace lockroom::bench
