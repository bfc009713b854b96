// ignored_paths; see workspace_ignore.h.
#include "guest/workspace_ignore.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "guest/workspace_git.h"

namespace lockroom::agent {

std::optional<std::set<std::string>> parse_check_ignore(const std::string& out) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t end = out.find('\0', start);
    if (end == std::string::npos) return std::nullopt;  // every field ends in NUL
    fields.emplace_back(out, start, end - start);
    start = end + 1;
  }
  if (fields.size() % 4 != 0) return std::nullopt;
  std::set<std::string> ignored;
  for (std::size_t i = 0; i < fields.size(); i += 4) {
    const std::string& source = fields[i];
    const std::string& pattern = fields[i + 2];
    if (!source.empty() && !(pattern.size() > 0 && pattern[0] == '!')) ignored.insert(fields[i + 3]);
  }
  return ignored;
}

Result<std::set<std::string>> ignored_paths(const std::string& root, const std::vector<std::string>& paths) {
  if (paths.empty()) return std::set<std::string>{};
  // The paths go in through a file outside the workspace (inside .git the watch would see it).
  char name[] = "/tmp/lockroom-check-ignore-XXXXXX";
  int fd = ::mkstemp(name);
  if (fd < 0) return make_error(ErrorCode::kUnavailable, std::string("cannot make a temporary file for git check-ignore: ") + std::strerror(errno));
  std::string input;
  for (const auto& p : paths) input.append(p).push_back('\0');
  std::size_t done = 0;
  while (done < input.size()) {
    ssize_t n = ::write(fd, input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  Result<std::set<std::string>> out = make_error(ErrorCode::kUnavailable, "cannot write the paths for git check-ignore");
  if (done == input.size()) {
    GitOptions options;
    options.stdin_path = name;
    options.max_out = input.size() * 2 + (1u << 20);  // each path once, with its source and pattern
    auto ran = run_git(root, {"check-ignore", "--stdin", "-z", "-v", "-n"}, options);
    if (!ran) {
      out = ran.error();
    } else if (ran->exit_code != 0 && ran->exit_code != 1) {  // 1: none ignored
      out = make_error(ErrorCode::kUnavailable, "git check-ignore failed: " + ran->problem());
    } else if (auto parsed = parse_check_ignore(ran->out); !parsed || ran->out_truncated) {
      out = make_error(ErrorCode::kUnavailable, "git check-ignore answered in a shape this agent does not read");
    } else {
      out = std::move(*parsed);
    }
  }
  ::unlink(name);
  return out;
}

}  // namespace lockroom::agent
