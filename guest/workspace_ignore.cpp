// ignored_paths; see workspace_ignore.h.
#include "guest/workspace_ignore.h"

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
  GitOptions options;
  options.stdin_data.emplace();
  for (const auto& p : paths) options.stdin_data->append(p).push_back('\0');
  options.max_out = options.stdin_data->size() * 2 + (1u << 20);  // each path once, with its source and pattern
  auto ran = run_git(root, {"check-ignore", "--stdin", "-z", "-v", "-n"}, options);
  if (!ran) return ran.error();
  if (ran->exit_code != 0 && ran->exit_code != 1)  // 1: none ignored
    return make_error(ErrorCode::kUnavailable, "git check-ignore failed: " + ran->problem());
  auto parsed = parse_check_ignore(ran->out);
  if (!parsed || ran->out_truncated) return make_error(ErrorCode::kUnavailable, "git check-ignore answered in a shape this agent does not read");
  return std::move(*parsed);
}

}  // namespace lockroom::agent
