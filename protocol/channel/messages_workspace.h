// workspace.* messages: import, checkout, manifest and export, with their bounds and record codecs.
// Part of the agent's message set; include protocol/channel/messages.h, which brings every part.
#pragma once

#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

// ---- workspace.* (protocol/channel.md, "Workspace"; JSON and record codecs in messages_workspace.cpp)
//
// import/checkout bring a git pack into the guest's workspace and check a commit out; manifest
// lists the workspace as git would add it ({path, mode, blob id, size} records); export sends
// the bytes of chosen manifest entries. Manifest and export bodies are binary records
// (big-endian), validated here against bounds the host declares: the guest is hostile.
namespace method {
inline constexpr const char* kWorkspaceImport = "workspace.import";
inline constexpr const char* kWorkspaceCheckout = "workspace.checkout";
inline constexpr const char* kWorkspaceManifest = "workspace.manifest";
inline constexpr const char* kWorkspaceExport = "workspace.export";
inline constexpr const char* kWorkspaceChanged = "workspace.changed";  // notification, agent → host
}  // namespace method

namespace agent_error {
inline constexpr int kWorkspaceConflict = -33040;  // local edits in the guest conflict with a sync (data.files)
inline constexpr int kNotARepository = -33041;     // the workspace has no .git: import first
}  // namespace agent_error

inline constexpr const char* kDefaultWorkspace = "/workspace";
inline constexpr const char* kDefaultBranch = "main";
inline constexpr std::int64_t kMaxPackBytes = 8LL << 30;           // the most any import may declare
inline constexpr std::int64_t kMaxManifestEntries = 1 << 21;       // the most any manifest may declare
inline constexpr std::int64_t kMaxWorkspaceFile = 4LL << 30;       // the largest single file either side accepts
inline constexpr std::int64_t kMaxWorkspaceBytes = 1LL << 40;      // the largest total either side accepts
inline constexpr std::size_t kMaxInlineManifest = 64u << 10;       // manifest bodies up to this go inline
inline constexpr std::size_t kMaxConflictFiles = 100;              // files named in a conflict error
inline constexpr std::size_t kMaxExportEntries = 50000;            // entries per workspace.export request
inline constexpr std::int64_t kMaxInlineBytes = 64LL << 20;        // the most content any manifest may carry inline
inline constexpr std::uint32_t kModeFile = 0100644;
inline constexpr std::uint32_t kModeExecutable = 0100755;
inline constexpr std::uint32_t kModeSymlink = 0120000;

// One file of the guest's workspace as git would add it. `id` is the git blob id (40 lowercase
// hex): SHA-1 of "blob <size>\0<content>"; a symlink's content is its target.
struct ManifestEntry {
  std::string path;  // relative, '/'-separated, raw bytes (not necessarily UTF-8)
  std::uint32_t mode = kModeFile;
  std::string id;
  std::uint64_t size = 0;
};

// What the host accepts in a manifest or an export; sent with the request so the agent refuses
// with a clear error instead of sending more. An agent that sends more anyway fails the channel.
struct WorkspaceBounds {
  std::int64_t max_entries = 100000;
  std::int64_t max_file_bytes = 256LL << 20;
  std::int64_t max_total_bytes = 2LL << 30;
};

// The largest size an entry of `mode` may have and still be taken: a symlink's target up to
// kMaxPath bytes, a file up to `bounds.max_file_bytes`. The agent lists a bigger file anyway,
// unread, with a zero id, and leaves it out of the manifest's byte total; the host refuses that
// entry by name and keeps reviewing the rest.
std::uint64_t max_entry_size(std::uint32_t mode, const WorkspaceBounds& bounds);

struct WorkspaceImportParams {
  std::string path = kDefaultWorkspace;
  std::int64_t size = 0;  // the pack's exact size in bytes
};
struct WorkspaceImportResult {
  std::uint32_t stream = 0;  // the host sends the pack here and CLOSEs
  bool created = false;      // the workspace repository was made by this import (git init)
};

struct WorkspaceCheckoutParams {
  std::string path = kDefaultWorkspace;
  std::string commit;                // 40 hex
  std::optional<std::string> base;   // sync: the commit the guest's worktree was checked out from
  std::string branch = kDefaultBranch;
  // The host's ignore rules that do not travel in the commit (global excludes, info/exclude,
  // .gitignore files above the workspace): written to <path>/.git/info/exclude after the
  // checkout, replacing it. Absent: the file is left as it is. At most kMaxWorkspaceExclude bytes.
  std::optional<std::string> exclude;
};
inline constexpr std::size_t kMaxWorkspaceExclude = 64u << 10;
struct WorkspaceCheckoutResult {
  std::string commit;
  std::string branch;
  bool branch_moved = false;  // false when the agent had moved the branch away from `base` itself
  std::int64_t files = 0;     // entries in the index afterwards
};

// How much file content a partial manifest may carry after its records ("inline"): each file up
// to `max_file_bytes`, all of them together up to `max_total_bytes` (both at most kMaxInlineBytes).
// With `deltas`, the agent may send a changed file as a delta against the version the since
// manifest lists for the same path (see InlinedContent).
struct InlineBounds {
  std::int64_t max_file_bytes = 1LL << 20;
  std::int64_t max_total_bytes = 8LL << 20;
  bool deltas = false;
};

struct WorkspaceManifestParams {
  std::string path = kDefaultWorkspace;
  WorkspaceBounds bounds;
  // The manifest the host holds in full (its id). The agent may then answer with only what
  // changed since it; an unknown or stale id gets a full manifest.
  std::optional<std::int64_t> since;
  // Present: a partial answer also carries the content of changed files read for it, within
  // these bounds (protocol/channel.md, "Inline content"). A whole manifest never does.
  std::optional<InlineBounds> inline_content;
};
struct WorkspaceManifestResult {
  std::int64_t manifest = 0;   // the agent's id for this listing (workspace.export refers to it)
  std::int64_t entries = 0;
  std::int64_t bytes = 0;      // sum of the entries' sizes, but for entries over max_entry_size()
  std::int64_t hashed = 0;     // files read and hashed for this manifest
  std::int64_t cached = 0;     // files whose id came from the stat cache
  std::int64_t skipped = 0;    // listed by git but neither a regular file nor a symlink now
  std::int64_t body = 0;       // bytes of encoded records
  std::string data;            // the records, when inline (body <= kMaxInlineManifest)
  std::uint32_t stream = 0;    // otherwise the stream that carries them
  // Present: a partial manifest, only the paths that changed since manifest `since` (each new or
  // changed entry, or a removal record: mode 0, zero id, size 0). `entries`, `bytes`, `hashed`
  // and `cached` then count the records sent, and `since` equals the params' `since`.
  std::optional<std::int64_t> since;
  // Records whose content follows the records (a partial manifest, when the host asked for
  // inline content), and the bytes of that content. `body` counts them too: for each, 4 bytes of
  // record index and the record's `size` bytes (a delta: its 8 header bytes and the bytes it
  // carries, both counted in `inline_bytes`).
  std::int64_t inlined = 0;
  std::int64_t inline_bytes = 0;
  // Milliseconds the agent spent making this answer (listing, hashing, encoding), as it measured
  // them: for diagnostics only (the host's step timings), never relied on.
  std::int64_t agent_ms = 0;
};

// workspace.changed (agent → host): the watch of a checked-out workspace saw something happen
// below `path` (a file written, created, removed or renamed, git's index or ignore files touched,
// or events lost). Debounced by the agent: at most one per kWorkspaceChangedGapMs per workspace,
// and the last change is always followed by one. Says only "look again", never what changed.
inline constexpr std::int64_t kWorkspaceChangedGapMs = 250;
struct WorkspaceChanged {
  std::string path = kDefaultWorkspace;
};

// The mode of a removal record in a partial manifest.
inline constexpr std::uint32_t kModeRemoved = 0;

struct WorkspaceExportParams {
  std::string path = kDefaultWorkspace;
  std::int64_t manifest = 0;           // from workspace.manifest
  std::vector<std::int64_t> entries;   // indexes into that manifest, in the order wanted
  WorkspaceBounds bounds;              // max_file_bytes and max_total_bytes apply
};
struct WorkspaceExportResult {
  std::uint32_t stream = 0;
  std::int64_t count = 0;
};

json to_json(const WorkspaceImportParams& v);
json to_json(const WorkspaceImportResult& v);
json to_json(const WorkspaceCheckoutParams& v);
json to_json(const WorkspaceCheckoutResult& v);
json to_json(const WorkspaceManifestParams& v);
json to_json(const WorkspaceManifestResult& v);
json to_json(const WorkspaceExportParams& v);
json to_json(const WorkspaceExportResult& v);

Result<WorkspaceImportParams> parse_workspace_import_params(const json& j);
Result<WorkspaceImportResult> parse_workspace_import_result(const json& j);
Result<WorkspaceCheckoutParams> parse_workspace_checkout_params(const json& j);
Result<WorkspaceCheckoutResult> parse_workspace_checkout_result(const json& j);
json to_json(const WorkspaceChanged& v);
Result<WorkspaceChanged> parse_workspace_changed(const json& j);
Result<WorkspaceManifestParams> parse_workspace_manifest_params(const json& j);
// `bounds` and `inline_content` are what the host asked for: a result announcing more is a lie
// (inline content only in a partial manifest, and only when asked for).
Result<WorkspaceManifestResult> parse_workspace_manifest_result(const json& j, const WorkspaceBounds& bounds,
                                                                const std::optional<InlineBounds>& inline_content = std::nullopt);
Result<WorkspaceExportParams> parse_workspace_export_params(const json& j);
Result<WorkspaceExportResult> parse_workspace_export_result(const json& j, std::int64_t requested);

// 40 lowercase hex digits <-> 20 raw bytes.
bool is_object_id(std::string_view hex);
std::string id_to_hex(std::string_view raw20);

// A manifest record: u32 mode, 20-byte raw id, u64 size, u16 path length, path bytes.
inline constexpr std::size_t kManifestFixedBytes = 4 + 20 + 8 + 2;  // all but the path
void append_manifest_record(std::string& out, const ManifestEntry& entry);
// One inlined content after a partial manifest's records: u32 record index, then the bytes
// (exactly the record's size).
void append_inline_content(std::string& out, std::uint32_t record, std::string_view content);

// A record's content carried in a partial manifest after the records: the whole file, or (when
// the host asked for deltas) a delta against the version of the same path in the since manifest
// (the base, which the host holds): the file is the base's first `prefix` bytes, then `content`,
// then the base's last `suffix` bytes. A delta's id cannot be checked without the base: the host
// rebuilds the file from its own copy of the base and checks the id then.
struct InlineDelta {
  std::uint32_t prefix = 0;
  std::uint32_t suffix = 0;
};
struct InlinedContent {
  std::size_t entry = 0;  // index into the manifest's records
  std::string content;
  std::optional<InlineDelta> delta;
};
// On the wire a delta's record index has this bit set and is followed by the prefix and suffix
// lengths (u32 each) before the bytes it carries.
inline constexpr std::uint32_t kInlineDeltaFlag = 0x80000000u;
inline constexpr std::size_t kInlineDeltaHeaderBytes = 8;
void append_inline_delta(std::string& out, std::uint32_t record, const InlineDelta& delta, std::string_view middle);
// The git blob id (40 hex) of some bytes, as the host computes it; the decoder has no hash of
// its own (protocol/ needs no crypto library).
using BlobIdFunction = std::function<std::string(std::string_view content)>;
// Whether a path from the guest may name a workspace file: relative, no empty, "." or ".."
// component, no ".git" component (any case), no NUL, at most kMaxPath bytes. Empty when fine.
std::string workspace_path_problem(std::string_view path);

// Reads manifest records as they arrive, checking their framing: exactly `announced` records,
// paths of 1 to kMaxPath bytes and strictly increasing (byte order, as git sorts them), sizes
// within max_entry_size() adding up to the announced byte total. What a record says (a path
// outside the workspace or in .git, a device mode, a size over the limit) is not judged here: the
// host's review refuses such an entry, by name and with the reason, and keeps the rest. Removal
// records (mode 0, zero id, size 0) are accepted only when the result announced a partial
// manifest (`since`). Then the inline content
// the result announced (`inlined`, `inline_bytes`): record indexes increasing and in range, no
// removal, each within `inline_bounds`, and each whole content's blob id (by `blob_id`) the
// record's; a delta only when `inline_bounds.deltas`, keeping no more of its base than the
// record's size.
class ManifestDecoder {
 public:
  ManifestDecoder(const WorkspaceManifestResult& announced, const WorkspaceBounds& bounds, const InlineBounds& inline_bounds = {},
                  BlobIdFunction blob_id = nullptr);
  Result<void> feed(std::string_view bytes);
  // The stream ended: everything announced must have arrived, and nothing more.
  Result<std::vector<ManifestEntry>> finish();
  // After finish(): the inlined contents, their ids checked, in record order.
  std::vector<InlinedContent> take_inlined() { return std::move(inlined_); }

 private:
  Result<void> record(std::string_view bytes);
  Result<void> inline_header(std::string_view bytes);
  Result<void> inline_done();
  Error fail(const std::string& why);

  std::int64_t announced_entries_;
  std::int64_t announced_bytes_;
  std::int64_t announced_body_;
  std::int64_t announced_inlined_;
  std::int64_t announced_inline_bytes_;
  WorkspaceBounds bounds_;
  InlineBounds inline_bounds_;
  BlobIdFunction blob_id_;
  bool partial_ = false;
  std::string pending_;
  std::int64_t received_ = 0;
  std::int64_t total_size_ = 0;
  std::vector<ManifestEntry> entries_;
  std::vector<InlinedContent> inlined_;
  std::uint64_t content_left_ = 0;  // bytes still due of the last inlined content
  bool in_content_ = false;
  std::int64_t inline_total_ = 0;  // bytes carried (a delta's header included)
  std::int64_t inline_files_ = 0;  // the sizes of the files they make
  std::optional<Error> error_;
};

// An export record: u32 entry (manifest index), u32 mode (0: the file is gone), u64 size, then
// `size` bytes, then the 20-byte raw blob id of those bytes as the agent computed it.
inline constexpr std::size_t kExportHeaderBytes = 16;
inline constexpr std::size_t kExportTrailerBytes = 20;
void append_export_header(std::string& out, std::uint32_t entry, std::uint32_t mode, std::uint64_t size);

// Splits an export stream into records, checking that they come in the requested order and stay
// within bounds. Bytes of a file are passed on as they arrive (never held here).
class ExportDecoder {
 public:
  struct Sink {
    std::function<void(std::int64_t entry, std::uint32_t mode, std::uint64_t size)> on_header;
    std::function<void(std::string_view bytes)> on_body;
    std::function<Result<void>(const std::string& id_hex)> on_trailer;  // an error fails the stream
  };
  ExportDecoder(std::vector<std::int64_t> requested, const WorkspaceBounds& bounds, Sink sink);
  Result<void> feed(std::string_view bytes);
  Result<void> finish() const;  // every requested record arrived, none cut short
  std::size_t records() const { return next_; }

 private:
  std::vector<std::int64_t> requested_;
  WorkspaceBounds bounds_;
  Sink sink_;
  std::size_t next_ = 0;
  enum class Part { kHeader, kBody, kTrailer } part_ = Part::kHeader;
  std::string pending_;
  std::uint64_t body_left_ = 0;
  std::int64_t total_ = 0;
  std::optional<Error> error_;
};

}  // namespace lockroom::protocol::channel
