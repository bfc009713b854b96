// The host's ignore rules that the guest needs (see guest_excludes.h).
#include "server/workspace/snapshot/guest_excludes.h"

#include <fnmatch.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "server/workspace/git_util.h"

namespace lockroom::workspace::snapshot {
namespace {

using ConfigPtr = GitPtr<git_config, git_config_free>;

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    std::size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// core.excludesFile, or git's default for it.
std::string global_excludes_path(git_repository* repo) {
  git_config* raw = nullptr;
  int rc = repo ? git_repository_config_snapshot(&raw, repo) : git_config_open_default(&raw);
  ConfigPtr config(rc == 0 ? raw : nullptr);
  if (config) {
    git_buf path = GIT_BUF_INIT;
    if (git_config_get_path(&path, config.get(), "core.excludesfile") == 0) {
      std::string out(path.ptr, path.size);
      git_buf_dispose(&path);
      return out;
    }
  }
  // Where libgit2 looks then (and so where the snapshot's ignore rules came from): "ignore" in
  // its XDG search path, $XDG_CONFIG_HOME/git or ~/.config/git unless set otherwise.
  git_buf dirs = GIT_BUF_INIT;
  std::string out;
  if (git_libgit2_opts(GIT_OPT_GET_SEARCH_PATH, GIT_CONFIG_LEVEL_XDG, &dirs) == 0 && dirs.ptr) {
    std::string_view list(dirs.ptr, dirs.size);
    std::string_view first = list.substr(0, list.find(':'));
    if (!first.empty()) out = std::string(first) + "/ignore";
  }
  git_buf_dispose(&dirs);
  return out;
}

void append_source(std::string& out, const std::string& what, const std::string& rebased) {
  if (rebased.empty()) return;
  std::string block = "# " + what + "\n" + rebased;
  if (out.size() + block.size() > kMaxGuestExcludeBytes) {
    std::size_t room = kMaxGuestExcludeBytes > out.size() ? kMaxGuestExcludeBytes - out.size() : 0;
    std::size_t cut = block.rfind('\n', room);
    if (cut == std::string::npos) return;
    block.resize(cut + 1);
  }
  out += block;
}

}  // namespace

std::string rebase_ignore_patterns(std::string_view text, std::string_view below) {
  const std::vector<std::string_view> into = components(below.empty() || below.back() != '/' ? below : below.substr(0, below.size() - 1));
  std::string out;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#' || line.find('\0') != std::string_view::npos) continue;
    std::string_view pattern = line;
    bool negated = pattern.front() == '!';
    if (negated) pattern.remove_prefix(1);
    bool folder_only = !pattern.empty() && pattern.back() == '/';
    std::string_view body = folder_only ? pattern.substr(0, pattern.size() - 1) : pattern;
    if (body.empty()) continue;
    if (body.find('/') == std::string_view::npos || into.empty()) {  // any depth, or nothing to rebase
      out.append(line);
      out += '\n';
      continue;
    }
    if (body.front() == '/') body.remove_prefix(1);
    if (body.substr(0, 3) == "**/") {  // any depth below its folder, so also below the workspace
      out.append(line);
      out += '\n';
      continue;
    }
    std::vector<std::string_view> parts = components(body);
    if (parts.size() <= into.size()) continue;  // the workspace itself or a folder above it: nothing inside
    bool leads_in = true;
    for (std::size_t i = 0; i < into.size() && leads_in; ++i) {
      std::string part(parts[i]), folder(into[i]);
      // "**" spans any number of folders: not rebased exactly here, so left out.
      leads_in = part != "**" && ::fnmatch(part.c_str(), folder.c_str(), FNM_PATHNAME) == 0;
    }
    if (!leads_in) continue;
    std::string rebased = negated ? "!/" : "/";
    for (std::size_t i = into.size(); i < parts.size(); ++i) {
      if (i > into.size()) rebased += '/';
      rebased.append(parts[i]);
    }
    if (folder_only) rebased += '/';
    out += rebased + "\n";
  }
  return out;
}

std::string guest_excludes(git_repository* repo, const std::string& prefix) {
  std::string out;
  std::string global = global_excludes_path(repo);
  if (!global.empty()) append_source(out, "core.excludesFile", rebase_ignore_patterns(read_text(global), prefix));
  if (!repo) return out;
  append_source(out, "the repository's info/exclude", rebase_ignore_patterns(read_text(std::string(git_repository_commondir(repo)) + "info/exclude"), prefix));
  const char* workdir = git_repository_workdir(repo);
  if (!workdir || prefix.empty()) return out;
  // The .gitignore of each folder above the workspace, from the repository's top down.
  std::string folder;
  for (std::string_view part : components(std::string_view(prefix).substr(0, prefix.size() - 1))) {
    std::string below = prefix.substr(folder.size());
    append_source(out, (folder.empty() ? std::string("the repository's top") : folder) + " .gitignore",
                  rebase_ignore_patterns(read_text(std::string(workdir) + folder + ".gitignore"), below));
    folder.append(part);
    folder += '/';
  }
  return out;
}

}  // namespace lockroom::workspace::snapshot
