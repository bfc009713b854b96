// Workspace wire types; see workspace.h.
#include "protocol/workspace.h"

#include <cstdio>

#include "protocol/channel/base64.h"

namespace lockroom::protocol {

namespace {

constexpr std::size_t kMaxSelection = 100000;

// Well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t extra;
    std::uint32_t cp;
    if (c < 0x80) extra = 0, cp = c;
    else if ((c & 0xe0) == 0xc0) extra = 1, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) extra = 2, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) extra = 3, cp = c & 0x07;
    else return false;
    if (i + extra >= s.size() && extra > 0) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

std::optional<std::vector<FileSelectionWire>> read_selection(ParamReader& reader) {
  auto raw = reader.any("select", false);
  if (!raw) return std::nullopt;
  if (!raw->is_array()) {
    reader.fail("select", "must be a list of {path, hunks?}");
    return std::nullopt;
  }
  if (raw->size() > kMaxSelection) {
    reader.fail("select", "has more than 100000 entries");
    return std::nullopt;
  }
  std::vector<FileSelectionWire> out;
  for (std::size_t i = 0; i < raw->size() && reader.ok(); ++i) {
    std::string where = "select[" + std::to_string(i) + "]";
    const json& item = (*raw)[i];
    if (!item.is_object()) {
      reader.fail(where.c_str(), "must be an object {path, hunks?}");
      break;
    }
    ParamReader r(item, where + ".");
    FileSelectionWire sel;
    sel.path = r.string("path", true).value_or("");
    sel.hunks = r.strings("hunks", false);
    reader.merge(r);
    out.push_back(std::move(sel));
  }
  return out;
}

}  // namespace

std::optional<WorkspaceParams> read_workspace(ParamReader& reader, const char* field) {
  auto raw = reader.any(field, false);
  if (!raw || raw->is_null()) return std::nullopt;
  WorkspaceParams out;
  if (raw->is_string()) {
    out.path = raw->get<std::string>();
  } else if (auto obj = reader.object(field, false)) {
    out.path = obj->string("path", true).value_or("");
    out.withhold = obj->strings("withhold", false).value_or(std::vector<std::string>{});
    out.allow = obj->strings("allow", false).value_or(std::vector<std::string>{});
    out.replace_default_withhold = obj->boolean("replaceDefaultWithhold", false).value_or(false);
    if (auto limits = obj->object("limits", false)) {
      out.max_files = limits->integer("maxFiles", false, 1);
      out.max_total_bytes = limits->integer("maxTotalBytes", false, 1);
      out.max_file_bytes = limits->integer("maxFileBytes", false, 1);
      obj->merge(*limits);
    }
    reader.merge(*obj);
  }
  if (reader.ok() && (out.path.empty() || out.path[0] != '/'))
    reader.fail(field, "must be an absolute folder path on the host (or {\"path\": ...}), got \"" + out.path + "\"");
  return out;
}

ChangesDiffParams read_changes_diff(ParamReader& reader) {
  ChangesDiffParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.path = reader.string("path", false);
  out.refresh = reader.boolean("refresh", false).value_or(true);
  out.view_id = reader.string("viewId", false);
  reader.reject_unknown();
  return out;
}

ChangesContentParams read_changes_content(ParamReader& reader) {
  ChangesContentParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.path = reader.string("path", true).value_or("");
  std::string side = reader.string("side", false).value_or("current");
  if (side != "base" && side != "current") reader.fail("side", "must be \"base\" or \"current\", got \"" + side + "\"");
  out.base = side == "base";
  out.view_id = reader.string("viewId", false);
  reader.reject_unknown();
  return out;
}

ChangesApplyParams read_changes_apply(ParamReader& reader) {
  ChangesApplyParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.view_id = reader.string("viewId", true).value_or("");
  out.select = read_selection(reader);
  std::string mode = reader.string("mode", false).value_or("worktree");
  if (mode != "worktree" && mode != "branch") reader.fail("mode", "must be \"worktree\" or \"branch\", got \"" + mode + "\"");
  out.branch_mode = mode == "branch";
  out.branch = reader.string("branch", false).value_or(out.sandbox_id);
  out.force = reader.boolean("force", false).value_or(false);
  reader.reject_unknown();
  return out;
}

ChangesDiscardParams read_changes_discard(ParamReader& reader) {
  ChangesDiscardParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.paths = reader.strings("paths", false);
  out.select = read_selection(reader);
  out.view_id = reader.string("viewId", false);
  if (reader.ok() && out.select && out.paths) reader.fail("select", "cannot be given with \"paths\": name files and hunks in select only");
  if (reader.ok() && out.select && !out.view_id)
    reader.fail("viewId", "is required with \"select\": the view (of changes/list or changes/diff) whose hunks are named");
  reader.reject_unknown();
  return out;
}

void put_text_or_base64(json& out, const std::string& key, std::string_view bytes) {
  if (valid_utf8(bytes)) {
    out[key] = std::string(bytes);
  } else {
    out[key] = channel::base64_encode(bytes);
    out[key + "Encoding"] = "base64";
  }
}

json mode_json(std::uint32_t mode) {
  if (mode == 0) return nullptr;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", mode);
  return buf;
}

}  // namespace lockroom::protocol
