// JSON of workspace.import, workspace.checkout, workspace.manifest and workspace.export, and the
// binary records of manifests and exports; see messages.h and protocol/channel.md ("Workspace").
#include <algorithm>
#include <cstring>

#include "protocol/channel/base64.h"
#include "protocol/channel/frame.h"
#include "protocol/channel/message_util.h"
#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

using detail::check_text;
using detail::finish;

namespace {

constexpr std::int64_t kMaxStreamId = 0x7fffffffLL;
constexpr std::size_t kManifestFixedBytes = 4 + 20 + 8 + 2;

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

void put_u16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

void put_u64(std::string& out, std::uint64_t v) {
  put_u32(out, static_cast<std::uint32_t>(v >> 32));
  put_u32(out, static_cast<std::uint32_t>(v & 0xffffffffu));
}

std::uint64_t get_u64(const char* p) { return (static_cast<std::uint64_t>(get_u32(p)) << 32) | get_u32(p + 4); }

std::uint16_t get_u16(const char* p) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(p[0]) << 8) | static_cast<unsigned char>(p[1]));
}

bool known_mode(std::uint32_t mode) { return mode == kModeFile || mode == kModeExecutable || mode == kModeSymlink; }

std::string mode_text(std::uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%o", mode);
  return buf;
}

// Printable, bounded form of a hostile path for error messages.
std::string shown(std::string_view path) {
  std::string out;
  for (unsigned char c : path.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  if (path.size() > 200) out += "...";
  return "\"" + out + "\"";
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

namespace {
std::string hex_to_raw(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string raw;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) raw.push_back(static_cast<char>((nibble(hex[i]) << 4) | nibble(hex[i + 1])));
  return raw;
}
}  // namespace

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

void append_manifest_record(std::string& out, const ManifestEntry& e) {
  put_u32(out, e.mode);
  out += hex_to_raw(e.id);
  put_u64(out, e.size);
  put_u16(out, static_cast<std::uint16_t>(e.path.size()));
  out += e.path;
}

void append_inline_content(std::string& out, std::uint32_t record, std::string_view content) {
  put_u32(out, record);
  out.append(content);
}

void append_inline_delta(std::string& out, std::uint32_t record, const InlineDelta& delta, std::string_view middle) {
  put_u32(out, record | kInlineDeltaFlag);
  put_u32(out, delta.prefix);
  put_u32(out, delta.suffix);
  out.append(middle);
}

ManifestDecoder::ManifestDecoder(const WorkspaceManifestResult& announced, const WorkspaceBounds& bounds, const InlineBounds& inline_bounds,
                                 BlobIdFunction blob_id)
    : announced_entries_(announced.entries), announced_bytes_(announced.bytes), announced_body_(announced.body),
      announced_inlined_(announced.inlined), announced_inline_bytes_(announced.inline_bytes), bounds_(bounds), inline_bounds_(inline_bounds),
      blob_id_(std::move(blob_id)), partial_(announced.since.has_value()) {
  entries_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(announced_entries_, 1 << 16)));
}

Error ManifestDecoder::fail(const std::string& why) {
  error_ = make_error(ErrorCode::kInvalidInput, why);
  return *error_;
}

Result<void> ManifestDecoder::feed(std::string_view bytes) {
  if (error_) return *error_;
  received_ += static_cast<std::int64_t>(bytes.size());
  if (received_ > announced_body_) return fail("the manifest is longer than the " + std::to_string(announced_body_) + " bytes announced");
  // The records, then (once every record is in) the inline content.
  while (!bytes.empty()) {
    if (in_content_) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(content_left_, bytes.size()));
      inlined_.back().content.append(bytes.substr(0, n));
      content_left_ -= n;
      bytes.remove_prefix(n);
      if (content_left_ == 0)
        if (auto ok = inline_done(); !ok) return ok.error();
      continue;
    }
    // Without inline content announced, bytes past the last record are read as one record too
    // many (and refused as such).
    const bool inline_part = announced_inlined_ > 0 && static_cast<std::int64_t>(entries_.size()) >= announced_entries_;
    std::size_t want = 4;
    if (inline_part) {
      if (pending_.size() >= 4 && (get_u32(pending_.data()) & kInlineDeltaFlag)) want += kInlineDeltaHeaderBytes;
    } else {
      if (pending_.size() < kManifestFixedBytes) {
        std::size_t take = std::min(kManifestFixedBytes - pending_.size(), bytes.size());
        pending_.append(bytes.substr(0, take));
        bytes.remove_prefix(take);
        if (pending_.size() < kManifestFixedBytes) break;
      }
      want = kManifestFixedBytes + get_u16(pending_.data() + 32);
    }
    std::size_t take = std::min(want - pending_.size(), bytes.size());
    pending_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (pending_.size() < want) break;
    if (inline_part && want == 4 && (get_u32(pending_.data()) & kInlineDeltaFlag)) continue;  // a delta: its header goes on
    auto ok = inline_part ? inline_header(pending_) : record(pending_);
    if (!ok) return fail(ok.error().message);
    pending_.clear();
  }
  return {};
}

Result<void> ManifestDecoder::inline_header(std::string_view header) {
  auto bad = [this](const std::string& why) {
    return make_error(ErrorCode::kInvalidInput, "inline content " + std::to_string(inlined_.size()) + " " + why);
  };
  if (static_cast<std::int64_t>(inlined_.size()) >= announced_inlined_)
    return bad("is one more than the " + std::to_string(announced_inlined_) + " announced");
  std::uint32_t index = get_u32(header.data());
  const bool is_delta = (index & kInlineDeltaFlag) != 0;
  index &= ~kInlineDeltaFlag;
  if (is_delta && !inline_bounds_.deltas) return bad("is a delta, which the host did not ask for");
  if (index >= entries_.size()) return bad("names record " + std::to_string(index) + " of " + std::to_string(entries_.size()));
  if (!inlined_.empty() && index <= inlined_.back().entry)
    return bad("names record " + std::to_string(index) + " after record " + std::to_string(inlined_.back().entry) + ": indexes must increase");
  const ManifestEntry& e = entries_[index];
  if (e.mode == kModeRemoved) return bad("is for record " + std::to_string(index) + ", which removes " + shown(e.path));
  if (e.size > static_cast<std::uint64_t>(inline_bounds_.max_file_bytes))
    return bad("is for " + shown(e.path) + " of " + std::to_string(e.size) + " bytes; the host asked for files up to " +
               std::to_string(inline_bounds_.max_file_bytes));
  std::optional<InlineDelta> delta;
  std::uint64_t carried = e.size;
  if (is_delta) {
    delta = InlineDelta{get_u32(header.data() + 4), get_u32(header.data() + 8)};
    std::uint64_t kept = std::uint64_t(delta->prefix) + delta->suffix;
    if (kept > e.size)
      return bad("for " + shown(e.path) + " keeps " + std::to_string(kept) + " bytes of its base, more than the " + std::to_string(e.size) +
                 " bytes of the file");
    carried = e.size - kept;
  }
  inline_files_ += static_cast<std::int64_t>(e.size);
  inline_total_ += static_cast<std::int64_t>(carried + (is_delta ? kInlineDeltaHeaderBytes : 0));
  if (inline_total_ > announced_inline_bytes_ || inline_files_ > inline_bounds_.max_total_bytes)
    return bad("brings the inline content over the " + std::to_string(std::min(announced_inline_bytes_, inline_bounds_.max_total_bytes)) +
               " bytes announced or asked for");
  inlined_.push_back(InlinedContent{index, {}, delta});
  inlined_.back().content.reserve(static_cast<std::size_t>(carried));
  content_left_ = carried;
  in_content_ = true;
  if (content_left_ == 0) return inline_done();
  return {};
}

Result<void> ManifestDecoder::inline_done() {
  in_content_ = false;
  const InlinedContent& c = inlined_.back();
  const ManifestEntry& e = entries_[c.entry];
  auto bad = [&](const std::string& why) {
    return make_error(ErrorCode::kInvalidInput, "inline content " + std::to_string(inlined_.size() - 1) + " (" + shown(e.path) + ") " + why);
  };
  if (c.delta) return {};  // checked once rebuilt from the base (InlinedContent)
  if (!blob_id_) return bad("cannot be checked: the host gave the decoder no way to compute blob ids");
  std::string id = blob_id_(c.content);
  if (id != e.id) return bad("has blob id " + id + ", but its record says " + e.id);
  return {};
}

Result<void> ManifestDecoder::record(std::string_view rec) {
  auto bad = [this](const std::string& why) {
    return make_error(ErrorCode::kInvalidInput, "manifest entry " + std::to_string(entries_.size()) + " " + why);
  };
  if (static_cast<std::int64_t>(entries_.size()) >= announced_entries_)
    return bad("is one more than the " + std::to_string(announced_entries_) + " announced");
  ManifestEntry e;
  e.mode = get_u32(rec.data());
  e.id = id_to_hex(rec.substr(4, 20));
  e.size = get_u64(rec.data() + 24);
  e.path = std::string(rec.substr(kManifestFixedBytes));
  if (e.mode == kModeRemoved && partial_) {
    if (e.size != 0 || rec.substr(4, 20) != std::string(20, '\0')) return bad("removes " + shown(e.path) + " but has a size or an id");
  }
  // What the entry says (its path, mode and size) is judged per entry by the review, which
  // refuses a bad one with its reason and keeps the rest; here only the framing: a path of 1 to
  // kMaxPath bytes, in order, and totals that add up.
  if (e.path.empty() || e.path.size() > kMaxPath)
    return bad("has a path of " + std::to_string(e.path.size()) + " bytes; paths are 1 to " + std::to_string(kMaxPath) + " bytes");
  if (!entries_.empty() && !(entries_.back().path < e.path))
    return bad(shown(e.path) + " is out of order (after " + shown(entries_.back().path) + "): paths must be sorted and unique");
  if (e.size <= max_entry_size(e.mode, bounds_)) total_size_ += static_cast<std::int64_t>(e.size);
  if (total_size_ > announced_bytes_) return bad("brings the total size over the " + std::to_string(announced_bytes_) + " bytes announced");
  entries_.push_back(std::move(e));
  return {};
}

Result<std::vector<ManifestEntry>> ManifestDecoder::finish() {
  if (error_) return *error_;
  if (!pending_.empty() || in_content_ || received_ != announced_body_)
    return make_error(ErrorCode::kInvalidInput, "the manifest ended after " + std::to_string(received_) + " of the " +
                                                    std::to_string(announced_body_) + " bytes announced");
  if (static_cast<std::int64_t>(entries_.size()) != announced_entries_ || total_size_ != announced_bytes_)
    return make_error(ErrorCode::kInvalidInput, "the manifest holds " + std::to_string(entries_.size()) + " entries of " +
                                                    std::to_string(total_size_) + " bytes, but announced " + std::to_string(announced_entries_) +
                                                    " entries of " + std::to_string(announced_bytes_) + " bytes");
  if (static_cast<std::int64_t>(inlined_.size()) != announced_inlined_ || inline_total_ != announced_inline_bytes_)
    return make_error(ErrorCode::kInvalidInput, "the manifest carries " + std::to_string(inlined_.size()) + " inline contents of " +
                                                    std::to_string(inline_total_) + " bytes, but announced " + std::to_string(announced_inlined_) +
                                                    " of " + std::to_string(announced_inline_bytes_) + " bytes");
  return std::move(entries_);
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

void append_export_header(std::string& out, std::uint32_t entry, std::uint32_t mode, std::uint64_t size) {
  put_u32(out, entry);
  put_u32(out, mode);
  put_u64(out, size);
}

ExportDecoder::ExportDecoder(std::vector<std::int64_t> requested, const WorkspaceBounds& bounds, Sink sink)
    : requested_(std::move(requested)), bounds_(bounds), sink_(std::move(sink)) {}

Result<void> ExportDecoder::feed(std::string_view bytes) {
  if (error_) return *error_;
  auto fail = [this](const std::string& why) -> Result<void> {
    error_ = make_error(ErrorCode::kInvalidInput, "export record " + std::to_string(next_) + " " + why);
    return *error_;
  };
  while (!bytes.empty()) {
    if (part_ == Part::kBody) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(body_left_, bytes.size()));
      if (sink_.on_body) sink_.on_body(bytes.substr(0, n));
      body_left_ -= n;
      bytes.remove_prefix(n);
      if (body_left_ == 0) part_ = Part::kTrailer;
      continue;
    }
    std::size_t want = part_ == Part::kHeader ? kExportHeaderBytes : kExportTrailerBytes;
    std::size_t take = std::min(want - pending_.size(), bytes.size());
    pending_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (pending_.size() < want) break;
    if (part_ == Part::kHeader) {
      if (next_ >= requested_.size()) return fail("is more than the " + std::to_string(requested_.size()) + " requested");
      std::int64_t entry = get_u32(pending_.data());
      std::uint32_t mode = get_u32(pending_.data() + 4);
      std::uint64_t size = get_u64(pending_.data() + 8);
      if (entry != requested_[next_])
        return fail("is for manifest entry " + std::to_string(entry) + ", but entry " + std::to_string(requested_[next_]) + " was due");
      if (mode != 0 && !known_mode(mode)) return fail("has mode " + mode_text(mode) + "; only 0, 100644, 100755 and 120000 exist");
      std::uint64_t max = mode == 0 ? 0 : mode == kModeSymlink ? kMaxPath : static_cast<std::uint64_t>(bounds_.max_file_bytes);
      if (size > max) return fail("announces " + std::to_string(size) + " bytes; the limit is " + std::to_string(max));
      total_ += static_cast<std::int64_t>(size);
      if (total_ > bounds_.max_total_bytes) return fail("brings the export over its limit of " + std::to_string(bounds_.max_total_bytes) + " bytes");
      if (sink_.on_header) sink_.on_header(entry, mode, size);
      body_left_ = size;
      part_ = size > 0 ? Part::kBody : Part::kTrailer;
    } else {
      if (sink_.on_trailer)
        if (auto ok = sink_.on_trailer(id_to_hex(pending_)); !ok) return fail(ok.error().message);
      next_++;
      part_ = Part::kHeader;
    }
    pending_.clear();
  }
  return {};
}

Result<void> ExportDecoder::finish() const {
  if (error_) return *error_;
  if (part_ != Part::kHeader || !pending_.empty() || next_ != requested_.size())
    return make_error(ErrorCode::kInvalidInput, "the export ended after " + std::to_string(next_) + " of " + std::to_string(requested_.size()) +
                                                    " records" + (part_ != Part::kHeader || !pending_.empty() ? ", in the middle of a record" : ""));
  return {};
}

}  // namespace lockroom::protocol::channel
