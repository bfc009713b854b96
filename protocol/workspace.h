// Wire types of the workspace methods on the editor face (see protocol/workspace.md):
// sandbox/create's `workspace` param, changes/*, workspace/sync.
//
// read_* functions turn params into plain structs, reporting the first bad field through the
// ParamReader. Results are built by the server's API layer with the helpers at the end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jsonrpc.h"
#include "protocol/params.h"

namespace lockroom::protocol {

// `workspace` in sandbox/create: a folder path, or {path, withhold?, allow?, replaceDefaultWithhold?,
// limits?: {maxFiles?, maxTotalBytes?, maxFileBytes?}}.
struct WorkspaceParams {
  std::string path;
  std::vector<std::string> withhold;
  std::vector<std::string> allow;
  bool replace_default_withhold = false;
  std::optional<std::int64_t> max_files, max_total_bytes, max_file_bytes;
};
// Reads `field` of the reader's object when present.
std::optional<WorkspaceParams> read_workspace(ParamReader& reader, const char* field);

struct FileSelectionWire {
  std::string path;
  std::optional<std::vector<std::string>> hunks;
};

struct ChangesDiffParams {
  std::string sandbox_id;
  std::optional<std::string> path;     // absent: every changed file
  bool refresh = true;                 // false: the view the last changes/list or diff took
  std::optional<std::string> view_id;  // answer from that kept view (no look at the guest)
};
ChangesDiffParams read_changes_diff(ParamReader& reader);

struct ChangesContentParams {
  std::string sandbox_id;
  std::string path;
  bool base = false;  // side: "base" | "current"
  std::optional<std::string> view_id;  // read from that kept view; absent: the latest view
};
ChangesContentParams read_changes_content(ParamReader& reader);

struct ChangesApplyParams {
  std::string sandbox_id;
  std::string view_id;                                   // required: the view the user reviewed
  std::optional<std::vector<FileSelectionWire>> select;  // absent: everything
  bool branch_mode = false;                              // mode: "worktree" | "branch"
  std::string branch;                                    // branch mode: lockroom/<branch>; default the sandbox id
  bool force = false;
};
ChangesApplyParams read_changes_apply(ParamReader& reader);

struct ChangesDiscardParams {
  std::string sandbox_id;
  std::optional<std::vector<std::string>> paths;  // absent (and no select): every change
  // Files or hunks of the view `view_id` (both or neither; not with `paths`).
  std::optional<std::vector<FileSelectionWire>> select;
  std::optional<std::string> view_id;
};
ChangesDiscardParams read_changes_discard(ParamReader& reader);

// Bytes as JSON text when they are valid UTF-8, else base64 with `<key>Encoding: "base64"`.
void put_text_or_base64(json& out, const std::string& key, std::string_view bytes);

// "100644" style octal mode text; 0 -> null.
json mode_json(std::uint32_t mode);

}  // namespace lockroom::protocol
