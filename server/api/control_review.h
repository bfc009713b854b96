// What `lockroom diff` and `lockroom apply` do once they reach a sandbox's control socket
// (control_client.h): ask for its changes, print them as git would (a unified diff, coloured on a
// terminal, or a diffstat), and apply them to the host workspace or a branch, or discard them in
// the sandbox — printing what was written and reporting conflicts per file.
//
// The run_* functions write to the streams they are given (the CLI passes stdout and stderr;
// tests pass string streams) and return the process exit status. The formatting helpers at the
// end are pure. CLI thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jsonrpc.h"
#include "server/api/control_client.h"

namespace lockroom::api {

// Paths name files or folders relative to the workspace's top folder; none means every change.
struct DiffRequest {
  std::vector<std::string> paths;
  bool stat = false;   // a diffstat instead of the patch
  bool color = false;  // ANSI colours as git uses them
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

struct ApplyRequest {
  std::vector<std::string> paths;
  std::optional<std::string> branch;  // commit to lockroom/<branch> instead of the worktree
  bool force = false;                 // branch: replace an existing lockroom/<branch>
  bool discard = false;               // throw the changes away in the sandbox instead
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// Exit status 0, or 1 when the changes cannot be read (the reason on `err`).
int run_diff(ControlClient& client, const DiffRequest& request, std::ostream& out, std::ostream& err);
// Exit status 0, or 1 on a conflict, a refused file, nothing matching `paths`, or an error.
int run_apply(ControlClient& client, const ApplyRequest& request, std::ostream& out, std::ostream& err);

// --- pure helpers -----------------------------------------------------------------------------

// Whether `path` is one of `pathspecs` or lies under one (a folder); no pathspecs: every path.
bool path_selected(std::string_view path, const std::vector<std::string>& pathspecs);

// A unified diff with git's colours: meta lines bold, hunk headers cyan, additions green,
// removals red.
std::string colorize_patch(std::string_view patch);

struct StatLine {
  std::string name;  // "path", or "old => new" for a rename
  std::size_t added = 0, removed = 0;
  bool binary = false;
};
// git's diffstat: " name | N +++--" per file (bars scaled to `bar_width`) and a summary line.
// The one diffstat of the CLI: `lockroom diff --stat` and `lockroom run`'s review print it.
std::string format_diffstat(const std::vector<StatLine>& lines, bool color, std::size_t bar_width = 40);

// A text field as the methods send it: text, or base64 with `<key>Encoding` (decoded).
std::string text_field(const protocol::json& object, const std::string& key);

}  // namespace lockroom::api
