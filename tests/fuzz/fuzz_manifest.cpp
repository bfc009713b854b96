// fuzz-manifest: libFuzzer over the guest's workspace manifest as the review side reads it.
//
// Input layout (every byte string is a valid input):
//   byte 0      mode: 0 the JSON form (review::parse_manifest_json); 1 binary records through
//               the channel's ManifestDecoder (as AgentClient::manifest receives them), then
//               review::validate_manifest, as the refresh does; 2 entries built from the bytes
//               directly (validate_manifest alone, paths reaching it unfiltered); 3 binary
//               records of a partial manifest (removal records allowed) through ManifestDecoder,
//               then review::apply_partial_manifest onto a small accepted view, as a later
//               refresh does; 4 the same with inline content after the records (the changed
//               files' bytes, each checked against its record's id with libgit2's hash, or
//               deltas when bit 1 of byte 1 is set)
//   byte 1      limits: bit 0 small (8 entries, 64-byte files, 256 bytes in all; inline 32-byte
//               files, 48 bytes in all), else defaults; for modes 1, 3 and 4, bits 1-7 split the
//               body into chunks of (value + 1) bytes
//   the rest    the manifest: JSON text (mode 0), records (modes 1 and 3), for mode 4 one byte
//               of record count then records and inline contents (u32 record index + the
//               record's size in bytes), or for mode 2 entries of
//               "path \n mode-byte size-byte id(40) \n" (a missing part is left empty)
// Invariants: no exception escapes; every accepted entry has a path that path_problem() accepts
// and that this file checks again on its own (relative, no empty/./.. component, no component
// that lowercases to ".git" once trailing dots and spaces are dropped, no "git~1", no NUL or
// control character), a known mode, a 40-hex id, a size within the per-file bound; accepted entries are
// sorted, unique, and none is a folder of another; their count and total are within the limits;
// for mode 2, accepted + refused equals the entries given; every refusal and error has a reason.
// Accepted inline content (mode 4): record indexes in range and increasing, never a removal, each
// file within the inline bounds, the whole within them too; a whole content exactly its record's
// size with its blob id (computed here again) its record's id, a delta only when asked for and
// making a file of its record's size.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/channel/messages.h"
#include "server/workspace/review/manifest.h"
#include "server/workspace/review/manifest_patch.h"
#include "server/workspace/review/path_rules.h"

namespace {

namespace review = lockroom::workspace::review;
namespace wire = lockroom::protocol::channel;
using lockroom::Result;

[[noreturn]] void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz-manifest invariant broken: %s %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// A component a filesystem could take for ".git", checked without path_rules (a second opinion
// on the cases that matter most: case, trailing dots and spaces, the 8.3 short name).
bool looks_like_dotgit(std::string_view component) {
  std::string lower;
  for (char c : component) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  while (!lower.empty() && (lower.back() == '.' || lower.back() == ' ')) lower.pop_back();
  if (auto colon = lower.find(':'); colon != std::string::npos) lower.resize(colon);
  return lower == ".git" || lower == "git~1";
}

void check_path(std::string_view path) {
  if (review::path_problem(path)) fail("an accepted path fails path_problem:", path);
  if (path.empty() || path.front() == '/' || path.size() > review::kMaxPathBytes) fail("an accepted path is empty, absolute or too long:", path);
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) fail("an accepted path holds NUL or a control character:", path);
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = path.find('/', start);
    std::string_view component = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (component.empty() || component == "." || component == "..") fail("an accepted path escapes or has an empty component:", path);
    if (looks_like_dotgit(component)) fail("an accepted path names .git:", path);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
}

void check(const Result<review::Manifest>& result, const review::ManifestLimits& limits, std::size_t given) {
  if (!result) {
    if (result.error().message.empty()) fail("an error without a message");
    return;
  }
  const review::Manifest& m = *result;
  if (m.files.size() > limits.max_entries) fail("more accepted entries than the limit");
  if (m.total_bytes > limits.max_total_bytes) fail("an accepted total over the limit");
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < m.files.size(); ++i) {
    const review::ManifestFile& f = m.files[i];
    check_path(f.path);
    if (f.mode != review::kModeFile && f.mode != review::kModeExecutable && f.mode != review::kModeSymlink) fail("an accepted unknown mode");
    if (f.size > limits.max_blob_bytes) fail("an accepted file over the per-file limit");
    if (f.mode == review::kModeSymlink && f.size > review::kMaxPathBytes) fail("an accepted symlink target over the path limit");
    total += f.size;
    if (i > 0) {
      const std::string& before = m.files[i - 1].path;
      if (!(before < f.path)) fail("accepted entries not sorted and unique:", f.path);
      if (f.path.compare(0, before.size() + 1, before + "/") == 0) fail("an accepted file is also a folder:", before);
    }
  }
  if (total != m.total_bytes) fail("total_bytes is not the sum of the accepted sizes");
  for (const auto& r : m.refused)
    if (r.reason.empty() || r.path.empty()) fail("a refusal without a path or reason");
  if (given != SIZE_MAX && m.files.size() + m.refused.size() != given) fail("accepted + refused differs from the entries given");
}

// The view a partial manifest (mode 3) is patched onto: what an earlier refresh accepted.
const review::Manifest& previous_view() {
  static const review::Manifest view = [] {
    std::vector<review::ManifestEntry> entries;
    for (const char* path : {"a", "d/x", "d/y", "e/f/g", "z"}) entries.push_back({path, review::kModeFile, std::string(40, 'b'), 3});
    auto m = review::validate_manifest(std::move(entries));
    if (!m || !m->refused.empty()) fail("the fixed view is not accepted");
    return *m;
  }();
  return view;
}

std::uint32_t u32_at(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(b[at + k]);
  return v;
}

// The git blob id of `content`, by libgit2 (a second opinion on the host's OpenSSL one).
std::string git_blob_id(std::string_view content) {
  git_oid oid;
  if (git_odb_hash(&oid, content.data(), content.size(), GIT_OBJECT_BLOB) != 0) fail("git_odb_hash failed");
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

// The inline contents a decoder accepted, against the records and bounds.
void check_inlined(const std::vector<wire::InlinedContent>& inlined, const std::vector<wire::ManifestEntry>& entries,
                   const wire::InlineBounds& bounds, const wire::WorkspaceManifestResult& announced) {
  std::int64_t total = 0, carried = 0;  // the files' sizes; the bytes on the wire
  for (std::size_t i = 0; i < inlined.size(); ++i) {
    const auto& c = inlined[i];
    if (c.entry >= entries.size()) fail("an accepted inline content names a record out of range");
    if (i > 0 && c.entry <= inlined[i - 1].entry) fail("accepted inline contents out of order");
    const auto& e = entries[c.entry];
    if (e.mode == wire::kModeRemoved) fail("an accepted inline content for a removal:", e.path);
    if (static_cast<std::int64_t>(e.size) > bounds.max_file_bytes) fail("an accepted inline content over the per-file bound");
    if (c.delta) {  // the middle of the file: its id is checked once rebuilt from the base
      if (!bounds.deltas) fail("an accepted delta the host did not ask for:", e.path);
      if (std::uint64_t(c.delta->prefix) + c.delta->suffix + c.content.size() != e.size)
        fail("an accepted delta that does not make a file of its record's size:", e.path);
      carried += static_cast<std::int64_t>(wire::kInlineDeltaHeaderBytes + c.content.size());
    } else {
      if (c.content.size() != e.size) fail("an accepted inline content of another size than its record:", e.path);
      if (git_blob_id(c.content) != e.id) fail("an accepted inline content whose blob id is not its record's:", e.path);
      carried += static_cast<std::int64_t>(c.content.size());
    }
    total += static_cast<std::int64_t>(e.size);
  }
  if (total > bounds.max_total_bytes) fail("accepted inline content over the total bound");
  if (static_cast<std::int64_t>(inlined.size()) != announced.inlined || carried != announced.inline_bytes)
    fail("accepted inline content other than announced");
}

// Modes 1, 3 and 4: the channel's decoder, then the review side's validation (or the patch of the
// last view with a partial manifest), as a refresh does. `records`: how many records come before
// the inline content (mode 4), else every record in the body.
void from_records(std::string_view body, unsigned chunk, const review::ManifestLimits& limits, bool partial,
                  std::optional<std::size_t> records = std::nullopt, const wire::InlineBounds& inline_bounds = {}) {
  wire::WorkspaceBounds bounds;
  bounds.max_entries = static_cast<std::int64_t>(limits.max_entries);
  bounds.max_file_bytes = static_cast<std::int64_t>(limits.max_blob_bytes);
  bounds.max_total_bytes = static_cast<std::int64_t>(limits.max_total_bytes);
  // Announce what a record-by-record count finds, so the decoder gets past its totals checks.
  wire::WorkspaceManifestResult announced;
  announced.body = static_cast<std::int64_t>(body.size());
  if (partial) announced.since = 1;
  std::vector<std::uint64_t> sizes;
  std::size_t at = 0;
  while (at + 34 <= body.size() && (!records || sizes.size() < *records)) {
    std::size_t len = (static_cast<unsigned char>(body[at + 32]) << 8) | static_cast<unsigned char>(body[at + 33]);
    std::uint64_t size = 0;
    for (int k = 0; k < 8; ++k) size = (size << 8) | static_cast<unsigned char>(body[at + 24 + static_cast<std::size_t>(k)]);
    size = std::min<std::uint64_t>(size, std::uint64_t{1} << 40);  // no overflow
    sizes.push_back(size);
    // Sizes over the per-entry bound are not in the total (the review refuses those entries).
    if (size <= wire::max_entry_size(u32_at(body, at), bounds)) announced.bytes += static_cast<std::int64_t>(size);
    at += 34 + len;
  }
  announced.entries = static_cast<std::int64_t>(sizes.size());
  // Then the inline contents, each the size of the record it names (or what is left).
  // A delta (the top bit of the index) carries its 8 header bytes and the file less the base's
  // prefix and suffix.
  while (records && at + 4 <= body.size()) {
    std::uint32_t raw = u32_at(body, at);
    std::uint32_t index = raw & ~wire::kInlineDeltaFlag;
    std::uint64_t size = index < sizes.size() ? sizes[index] : 0;
    if ((raw & wire::kInlineDeltaFlag) && at + 12 <= body.size()) {
      std::uint64_t kept = std::uint64_t(u32_at(body, at + 4)) + u32_at(body, at + 8);
      size = wire::kInlineDeltaHeaderBytes + (kept <= size ? size - kept : 0);
    }
    size = std::min<std::uint64_t>(size, body.size() - at - 4);
    announced.inlined++;
    announced.inline_bytes += static_cast<std::int64_t>(size);
    at += 4 + size;
  }
  wire::ManifestDecoder decoder(announced, bounds, inline_bounds, git_blob_id);
  for (std::size_t from = 0; from < body.size(); from += chunk)
    if (!decoder.feed(body.substr(from, chunk))) return;
  auto entries = decoder.finish();
  if (!entries) return;
  check_inlined(decoder.take_inlined(), *entries, inline_bounds, announced);
  std::vector<review::ManifestEntry> raw;
  for (auto& e : *entries) raw.push_back({std::move(e.path), e.mode, std::move(e.id), e.size});
  std::size_t given = raw.size();
  if (!partial) return check(review::validate_manifest(std::move(raw), limits), limits, given);
  // Every record either lands in the view (an upsert), leaves it (a removal), or is refused.
  std::vector<std::string> removed;
  for (const auto& e : raw)
    if (e.mode == review::kModeRemoved) removed.push_back(e.path);
  auto patched = review::apply_partial_manifest(previous_view(), std::move(raw), limits);
  check(patched, limits, SIZE_MAX);
  if (patched)
    for (const auto& path : removed)
      if (std::any_of(patched->files.begin(), patched->files.end(), [&](const review::ManifestFile& f) { return f.path == path; }))
        fail("a removed path is still in the patched view:", path);
}

// Mode 2: entries straight from the bytes, so validate_manifest sees any path at all.
void from_lines(std::string_view rest, const review::ManifestLimits& limits) {
  static const std::uint32_t kModes[] = {review::kModeFile, review::kModeExecutable, review::kModeSymlink, 040000, 0160000, 020000, 0};
  std::vector<review::ManifestEntry> entries;
  while (!rest.empty() && entries.size() < 64) {
    review::ManifestEntry e;
    std::size_t nl = rest.find('\n');
    e.path = std::string(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (rest.size() >= 2) {
      e.mode = kModes[static_cast<unsigned char>(rest[0]) % (sizeof kModes / sizeof kModes[0])];
      e.size = static_cast<unsigned char>(rest[1]) * 7u;
      rest.remove_prefix(2);
    }
    std::size_t id_end = rest.find('\n');
    e.id = std::string(rest.substr(0, id_end));
    rest = id_end == std::string_view::npos ? std::string_view() : rest.substr(id_end + 1);
    entries.push_back(std::move(e));
  }
  std::size_t given = entries.size();
  check(review::validate_manifest(std::move(entries), limits), limits, given);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  unsigned mode = static_cast<unsigned char>(input[0]) % 5;
  unsigned flags = static_cast<unsigned char>(input[1]);
  std::string_view rest = input.substr(2);
  review::ManifestLimits limits;
  wire::InlineBounds inline_bounds;
  if (flags & 1) {
    limits.max_entries = 8;
    limits.max_blob_bytes = 64;
    limits.max_total_bytes = 256;
    inline_bounds = wire::InlineBounds{32, 48};
  }
  inline_bounds.deltas = (flags & 2) != 0;
  try {
    switch (mode) {
      case 0: check(review::parse_manifest_json(rest, limits), limits, SIZE_MAX); break;
      case 1: from_records(rest, (flags >> 1) + 1, limits, false); break;
      case 2: from_lines(rest, limits); break;
      case 3: from_records(rest, (flags >> 1) + 1, limits, true); break;
      default:
        if (!rest.empty())
          from_records(rest.substr(1), (flags >> 1) + 1, limits, true, static_cast<unsigned char>(rest[0]), inline_bounds);
        break;
    }
  } catch (...) {
    fail("an exception escaped");
  }
  return 0;
}
