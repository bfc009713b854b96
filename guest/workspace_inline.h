// A partial manifest's inline content (protocol/channel.md, "Inline content"): after the records,
// the content of each changed file the manifest read, whole, or, when the host takes deltas, as a
// delta against the version the host already holds: the since manifest's version of the same
// path, when the agent still has its bytes (SentContents: what earlier manifests carried). An
// agent that edits a line of a big file then sends the line, not the file: under TCG the channel
// moves ~25 MB/s, so the bytes sent are most of a review's time.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "guest/workspace_inline_delta.h"
#include "guest/workspace_manifest.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

// The bytes of files recently sent inline, by blob id (hex), up to a byte budget (oldest out).
class SentContents {
 public:
  explicit SentContents(std::uint64_t budget = std::uint64_t(16) << 20) : budget_(budget) {}
  void keep(const std::string& id, std::string bytes);
  const std::string* find(const std::string& id) const;
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::uint64_t budget_;
  std::uint64_t bytes_ = 0;
  std::unordered_map<std::string, std::string> contents_;
  std::deque<std::string> order_;  // ids, oldest first
};

// The since manifest's entry for a path (null: it listed none).
using BaseEntry = std::function<const protocol::channel::ManifestEntry*(const std::string& path)>;

// Appends, for each record in order that is not a removal, whose content `captured` holds and
// that keeps the whole within `bounds`, its content: as a delta against the since manifest's
// version (`base_of`) when `bounds.deltas`, `sent` has that version's bytes and the delta is less
// than half the file; else whole. Counts them in `result.inlined` and `result.inline_bytes`.
// Every content sent is kept in `sent` for the next manifest's deltas.
void append_inline_contents(std::string& body, const std::vector<protocol::channel::ManifestEntry>& records, ContentCapture& captured,
                            const protocol::channel::InlineBounds& bounds, const BaseEntry& base_of, SentContents& sent,
                            protocol::channel::WorkspaceManifestResult& result);

}  // namespace lockroom::agent
