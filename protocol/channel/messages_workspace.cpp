// JSON of workspace.import, workspace.checkout, workspace.manifest and workspace.export (their
// binary records: messages_workspace_records.cpp); see messages.h and protocol/channel.md
// ("Workspace").
#include <algorithm>

#include "protocol/channel/base64.h"
#include "protocol/channel/message_util.h"
#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

using detail::check_text;
using detail::finish;

namespace {

constexpr std::int64_t kMaxStreamId = 0x7fffffffLL;

std::string read_workspace(ParamReader& r) {
  std::string path = r.string("path", false).value_or(kDefaultWorkspace);
  if (!r.ok()) return path;
  check_text(r, "path", path, kMaxPath, true);
  if (r.ok() && path.front() != '/') r.fail("path", "must be absolute, got \"" + path + "\"");
  return path;
}

void read_id(ParamReader& r, const char* field, std::string& out, bool required) {
  auto id = r.string(field, required);
  if (!id) return;
  if (r.ok() && !is_object_id(*id)) r.fail(field, "must be a commit id of 40 lowercase hex digits, got \"" + id->substr(0, 64) + "\"");
  out = *id;
}

// A branch name as `git check-ref-format --branch` would take it, kept to a safe subset.
void check_branch(ParamReader& r, const std::string& branch) {
  if (!r.ok()) return;
  check_text(r, "branch", branch, 200, true);
  if (!r.ok()) return;
  bool bad = branch.front() == '-' || branch.front() == '/' || branch.back() == '/' || branch.back() == '.' ||
             branch.find("..") != std::string::npos || branch.find("//") != std::string::npos || branch.find("@{") != std::string::npos ||
             (branch.size() >= 5 && branch.compare(branch.size() - 5, 5, ".lock") == 0);
  for (unsigned char c : branch)
    if (c < 0x20 || c == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' || c == '*' || c == '[' || c == '\\') bad = true;
  if (bad) r.fail("branch", "is not a valid git branch name: \"" + branch + "\"");
}

json bounds_json(json j, const WorkspaceBounds& b) {
  j["maxEntries"] = b.max_entries;
  j["maxFileBytes"] = b.max_file_bytes;
  j["maxTotalBytes"] = b.max_total_bytes;
  return j;
}

WorkspaceBounds read_bounds(ParamReader& r) {
  WorkspaceBounds b;
  b.max_entries = r.integer("maxEntries", false, 1, kMaxManifestEntries).value_or(b.max_entries);
  b.max_file_bytes = r.integer("maxFileBytes", false, 0, kMaxWorkspaceFile).value_or(b.max_file_bytes);
  b.max_total_bytes = r.integer("maxTotalBytes", false, 0, kMaxWorkspaceBytes).value_or(b.max_total_bytes);
  return b;
}

}  // namespace

// ---- ids and paths

bool is_object_id(std::string_view hex) {
  return hex.size() == 40 && std::all_of(hex.begin(), hex.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string id_to_hex(std::string_view raw) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  hex.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    hex.push_back(digits[c >> 4]);
    hex.push_back(digits[c & 15]);
  }
  return hex;
}

std::uint64_t max_entry_size(std::uint32_t mode, const WorkspaceBounds& bounds) {
  return mode == kModeSymlink ? kMaxPath : static_cast<std::uint64_t>(std::max<std::int64_t>(bounds.max_file_bytes, 0));
}

std::string workspace_path_problem(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.size() > kMaxPath) return "is " + std::to_string(path.size()) + " bytes long; the limit is " + std::to_string(kMaxPath);
  if (path.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (path.front() == '/') return "is absolute";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    std::string_view part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty()) return "has an empty component";
    if (part == "." || part == "..") return "has a \"" + std::string(part) + "\" component";
    if (part.size() == 4) {
      std::string lower(part);
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower == ".git") return "is inside a .git folder";
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return {};
}

// ---- import / checkout

json to_json(const WorkspaceImportParams& v) { return json{{"path", v.path}, {"size", v.size}}; }

Result<WorkspaceImportParams> parse_workspace_import_params(const json& j) {
  ParamReader r(j);
  WorkspaceImportParams v;
  v.path = read_workspace(r);
  v.size = r.integer("size", true, 0, kMaxPackBytes).value_or(0);
  return finish(r, std::move(v));
}

json to_json(const WorkspaceImportResult& v) { return json{{"stream", v.stream}, {"created", v.created}}; }

Result<WorkspaceImportResult> parse_workspace_import_result(const json& j) {
  ParamReader r(j);
  WorkspaceImportResult v;
  v.stream = static_cast<std::uint32_t>(r.integer("stream", true, 1, kMaxStreamId).value_or(0));
  v.created = r.boolean("created", true).value_or(false);
  return finish(r, std::move(v));
}

json to_json(const WorkspaceCheckoutParams& v) {
  json j{{"path", v.path}, {"commit", v.commit}, {"branch", v.branch}};
  if (v.base) j["base"] = *v.base;
  if (v.exclude) j["exclude"] = *v.exclude;
  return j;
}

Result<WorkspaceCheckoutParams> parse_workspace_checkout_params(const json& j) {
  ParamReader r(j);
  WorkspaceCheckoutParams v;
  v.path = read_workspace(r);
  read_id(r, "commit", v.commit, true);
  std::string base;
  read_id(r, "base", base, false);
  if (!base.empty()) v.base = base;
  v.branch = r.string("branch", false).value_or(kDefaultBranch);
  check_branch(r, v.branch);
  if (r.ok() && j.contains("exclude")) {
    v.exclude = r.string("exclude", true);
    if (v.exclude && v.exclude->size() > kMaxWorkspaceExclude)
      r.fail("exclude", "is " + std::to_string(v.exclude->size()) + " bytes; the limit is " + std::to_string(kMaxWorkspaceExclude));
    else if (v.exclude && v.exclude->find('\0') != std::string::npos)
      r.fail("exclude", "contains a NUL byte");
  }
  return finish(r, std::move(v));
}

json to_json(const WorkspaceCheckoutResult& v) {
  return json{{"commit", v.commit}, {"branch", v.branch}, {"branchMoved", v.branch_moved}, {"files", v.files}};
}

Result<WorkspaceCheckoutResult> parse_workspace_checkout_result(const json& j) {
  ParamReader r(j);
  WorkspaceCheckoutResult v;
  read_id(r, "commit", v.commit, true);
  v.branch = r.string("branch", true).value_or("");
  check_branch(r, v.branch);
  v.branch_moved = r.boolean("branchMoved", true).value_or(false);
  v.files = r.integer("files", true, 0, kMaxManifestEntries).value_or(0);
  return finish(r, std::move(v));
}

// ---- changed (notification)

json to_json(const WorkspaceChanged& v) { return json{{"path", v.path}}; }

Result<WorkspaceChanged> parse_workspace_changed(const json& j) {
  ParamReader r(j);
  WorkspaceChanged v;
  auto path = r.string("path", true);
  if (path) v.path = *path;
  if (r.ok()) check_text(r, "path", v.path, kMaxPath, true);
  if (r.ok() && v.path.front() != '/') r.fail("path", "must be absolute");
  return finish(r, std::move(v));
}

// ---- manifest

json to_json(const WorkspaceManifestParams& v) {
  json j = bounds_json(json{{"path", v.path}}, v.bounds);
  if (v.since) j["since"] = *v.since;
  if (v.inline_content) {
    j["inline"] = json{{"maxFileBytes", v.inline_content->max_file_bytes}, {"maxTotalBytes", v.inline_content->max_total_bytes}};
    if (v.inline_content->deltas) j["inline"]["deltas"] = true;
  }
  return j;
}

Result<WorkspaceManifestParams> parse_workspace_manifest_params(const json& j) {
  ParamReader r(j);
  WorkspaceManifestParams v;
  v.path = read_workspace(r);
  v.bounds = read_bounds(r);
  if (j.is_object() && j.contains("since")) v.since = r.integer("since", true, 1);
  if (auto in = r.object("inline", false)) {
    InlineBounds b;
    b.max_file_bytes = in->integer("maxFileBytes", true, 0, kMaxInlineBytes).value_or(0);
    b.max_total_bytes = in->integer("maxTotalBytes", true, 0, kMaxInlineBytes).value_or(0);
    b.deltas = in->boolean("deltas", false).value_or(false);
    r.merge(*in);
    v.inline_content = b;
  }
  return finish(r, std::move(v));
}

json to_json(const WorkspaceManifestResult& v) {
  json j{{"manifest", v.manifest}, {"entries", v.entries}, {"bytes", v.bytes}, {"hashed", v.hashed},
         {"cached", v.cached}, {"skipped", v.skipped}, {"body", v.body}};
  if (v.stream) {
    j["stream"] = v.stream;
  } else {
    j["data"] = base64_encode(v.data);
  }
  if (v.since) j["since"] = *v.since;
  if (v.inlined > 0) {
    j["inlined"] = v.inlined;
    j["inlineBytes"] = v.inline_bytes;
  }
  if (v.agent_ms > 0) j["agentMs"] = v.agent_ms;
  return j;
}

Result<WorkspaceManifestResult> parse_workspace_manifest_result(const json& j, const WorkspaceBounds& bounds,
                                                                const std::optional<InlineBounds>& inline_content) {
  ParamReader r(j);
  WorkspaceManifestResult v;
  v.manifest = r.integer("manifest", true, 1).value_or(0);
  v.entries = r.integer("entries", true, 0, bounds.max_entries).value_or(0);
  v.bytes = r.integer("bytes", true, 0, bounds.max_total_bytes).value_or(0);
  v.hashed = r.integer("hashed", true, 0, v.entries).value_or(0);
  v.cached = r.integer("cached", true, 0, v.entries).value_or(0);
  v.skipped = r.integer("skipped", true, 0, kMaxManifestEntries).value_or(0);
  if (r.ok() && j.contains("since")) v.since = r.integer("since", true, 1);
  if (r.ok() && j.contains("agentMs")) v.agent_ms = r.integer("agentMs", true, 0, 24LL * 3600 * 1000).value_or(0);
  if (r.ok() && v.hashed + v.cached > v.entries)
    r.fail("hashed", "and \"cached\" add up to " + std::to_string(v.hashed + v.cached) + ", more than the " + std::to_string(v.entries) + " entries");
  // Inline content: only in a partial manifest, only when asked for, within what was asked.
  if (r.ok() && j.contains("inlined")) {
    if (!v.since || !inline_content) {
      r.fail("inlined", v.since ? "is there, but the host asked for no inline content" : "is there, but only a partial manifest carries inline content");
    } else {
      v.inlined = r.integer("inlined", true, 0, v.entries).value_or(0);
      v.inline_bytes = r.integer("inlineBytes", true, 0, std::min(inline_content->max_total_bytes, v.bytes)).value_or(0);
    }
  } else if (r.ok() && j.contains("inlineBytes")) {
    r.fail("inlineBytes", "is there without \"inlined\"");
  }
  const std::int64_t inline_part = v.inlined * 4 + v.inline_bytes;
  std::int64_t min_body = v.entries * static_cast<std::int64_t>(kManifestFixedBytes + 1) + inline_part;
  std::int64_t max_body = v.entries * static_cast<std::int64_t>(kManifestFixedBytes + kMaxPath) + inline_part;
  v.body = r.integer("body", true, 0, max_body).value_or(0);
  if (r.ok() && v.body < min_body)
    r.fail("body", "is " + std::to_string(v.body) + " bytes, too short for " + std::to_string(v.entries) + " entries" +
                       (v.inlined ? " and " + std::to_string(v.inlined) + " inline contents of " + std::to_string(v.inline_bytes) + " bytes" : ""));
  if (r.ok() && j.contains("stream")) {
    v.stream = static_cast<std::uint32_t>(r.integer("stream", true, 1, kMaxStreamId).value_or(0));
  } else if (r.ok()) {
    v.data = detail::read_base64(r, "data", true, kMaxInlineManifest);
    if (r.ok() && static_cast<std::int64_t>(v.data.size()) != v.body)
      r.fail("data", "holds " + std::to_string(v.data.size()) + " bytes, but \"body\" says " + std::to_string(v.body));
  }
  return finish(r, std::move(v));
}

// ---- export

json to_json(const WorkspaceExportParams& v) {
  json j{{"path", v.path}, {"manifest", v.manifest}, {"entries", v.entries}};
  return bounds_json(std::move(j), v.bounds);
}

Result<WorkspaceExportParams> parse_workspace_export_params(const json& j) {
  ParamReader r(j);
  WorkspaceExportParams v;
  v.path = read_workspace(r);
  v.manifest = r.integer("manifest", true, 1).value_or(0);
  v.bounds = read_bounds(r);
  auto entries = r.any("entries", true);
  if (entries && !entries->is_array()) r.fail("entries", "must be an array of manifest indexes");
  if (r.ok() && entries->size() > kMaxExportEntries)
    r.fail("entries", "has " + std::to_string(entries->size()) + " items; the limit is " + std::to_string(kMaxExportEntries) + " per request");
  for (std::size_t i = 0; r.ok() && i < entries->size(); ++i) {
    const json& e = (*entries)[i];
    if (!e.is_number_integer() || e.get<std::int64_t>() < 0)
      return make_error(ErrorCode::kInvalidInput, "\"entries[" + std::to_string(i) + "]\" must be a manifest index (an integer >= 0)");
    v.entries.push_back(e.get<std::int64_t>());
  }
  return finish(r, std::move(v));
}

json to_json(const WorkspaceExportResult& v) { return json{{"stream", v.stream}, {"count", v.count}}; }

Result<WorkspaceExportResult> parse_workspace_export_result(const json& j, std::int64_t requested) {
  ParamReader r(j);
  WorkspaceExportResult v;
  v.stream = static_cast<std::uint32_t>(r.integer("stream", true, 1, kMaxStreamId).value_or(0));
  v.count = r.integer("count", true, requested, requested).value_or(0);
  return finish(r, std::move(v));
}

}  // namespace lockroom::protocol::channel
