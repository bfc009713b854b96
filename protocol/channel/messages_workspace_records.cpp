// The binary records of workspace manifests (records, inline content, deltas) and exports, written
// and read back with every bound of a hostile agent checked; see messages_workspace.h and
// protocol/channel.md ("Workspace").
#include <algorithm>
#include <cstdio>

#include "protocol/channel/message_util.h"
#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

namespace {

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

std::string hex_to_raw(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string raw;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) raw.push_back(static_cast<char>((nibble(hex[i]) << 4) | nibble(hex[i + 1])));
  return raw;
}

}  // namespace

// ---- manifests

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

// ---- exports

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
