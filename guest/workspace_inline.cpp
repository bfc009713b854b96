// A partial manifest's inline content, whole or as deltas (see workspace_inline.h).
#include "guest/workspace_inline.h"

#include <algorithm>

namespace lockroom::agent {

namespace channel = protocol::channel;

void SentContents::keep(const std::string& id, std::string bytes) {
  if (bytes.size() > budget_ || contents_.count(id)) return;
  bytes_ += bytes.size();
  contents_.emplace(id, std::move(bytes));
  order_.push_back(id);
  while (bytes_ > budget_ && !order_.empty()) {
    auto oldest = contents_.find(order_.front());
    bytes_ -= oldest->second.size();
    contents_.erase(oldest);
    order_.pop_front();
  }
}

const std::string* SentContents::find(const std::string& id) const {
  auto it = contents_.find(id);
  return it == contents_.end() ? nullptr : &it->second;
}

void append_inline_contents(std::string& body, const std::vector<channel::ManifestEntry>& records, ContentCapture& captured,
                            const channel::InlineBounds& bounds, const BaseEntry& base_of, SentContents& sent,
                            channel::WorkspaceManifestResult& result) {
  std::int64_t files = 0;  // the sizes of the files sent, whole or not: the host bounds those
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& e = records[i];
    if (e.mode == channel::kModeRemoved || static_cast<std::int64_t>(e.size) > bounds.max_file_bytes ||
        files + static_cast<std::int64_t>(e.size) > bounds.max_total_bytes)
      continue;
    std::string* content = captured.find(e.path);
    if (!content || content->size() != e.size) continue;
    const std::string* base = nullptr;
    if (bounds.deltas)
      if (const auto* before = base_of(e.path); before && before->mode == e.mode) base = sent.find(before->id);
    std::int64_t carried = static_cast<std::int64_t>(e.size);
    bool as_delta = false;
    if (base) {
      auto delta = delta_between(*base, *content);
      std::size_t middle = content->size() - delta.prefix - delta.suffix;
      if (channel::kInlineDeltaHeaderBytes + middle < content->size() / 2) {
        channel::append_inline_delta(body, static_cast<std::uint32_t>(i), delta, std::string_view(*content).substr(delta.prefix, middle));
        carried = static_cast<std::int64_t>(channel::kInlineDeltaHeaderBytes + middle);
        as_delta = true;
      }
    }
    if (!as_delta) channel::append_inline_content(body, static_cast<std::uint32_t>(i), *content);
    result.inlined++;
    result.inline_bytes += carried;
    files += static_cast<std::int64_t>(e.size);
    sent.keep(e.id, std::move(*content));
  }
}

}  // namespace lockroom::agent
