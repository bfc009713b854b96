// OutputTextEncoder; see output_text.h.
#include "server/core/output_text.h"

#include "protocol/channel/base64.h"

namespace lockroom::core {

namespace {

// Bytes in the sequence a lead byte starts, and the range its first continuation byte must be
// in (which rules out overlong forms, surrogates and code points above U+10FFFF). 0: invalid.
struct Lead {
  int length;
  unsigned char lo, hi;
};
Lead classify_lead(unsigned char c) {
  if (c < 0x80) return {1, 0, 0};
  if (c >= 0xC2 && c <= 0xDF) return {2, 0x80, 0xBF};
  if (c == 0xE0) return {3, 0xA0, 0xBF};
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return {3, 0x80, 0xBF};
  if (c == 0xED) return {3, 0x80, 0x9F};
  if (c == 0xF0) return {4, 0x90, 0xBF};
  if (c >= 0xF1 && c <= 0xF3) return {4, 0x80, 0xBF};
  if (c == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

Utf8Scan scan_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    Lead lead = classify_lead(c);
    if (lead.length == 0) return {i, false};
    std::size_t have = s.size() - i;
    std::size_t check = std::min<std::size_t>(have, static_cast<std::size_t>(lead.length));
    for (std::size_t k = 1; k < check; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      bool ok = k == 1 ? (cc >= lead.lo && cc <= lead.hi) : (cc >= 0x80 && cc <= 0xBF);
      if (!ok) return {i, false};
    }
    if (have < static_cast<std::size_t>(lead.length)) return {i, true};
    i += static_cast<std::size_t>(lead.length);
  }
  return {i, false};
}

std::string base64_encode(std::string_view bytes) { return protocol::channel::base64_encode(bytes); }

OutputChunk OutputTextEncoder::encode(std::string_view bytes) {
  std::string buf;
  std::string_view view = bytes;
  if (!held_.empty()) {
    buf = std::move(held_);
    held_.clear();
    buf.append(bytes);
    view = buf;
  }
  Utf8Scan scan = scan_utf8(view);
  if (scan.valid_prefix == view.size()) return OutputChunk{std::string(view), false};
  if (scan.incomplete_tail) {
    held_.assign(view.substr(scan.valid_prefix));
    return OutputChunk{std::string(view.substr(0, scan.valid_prefix)), false};
  }
  return OutputChunk{base64_encode(view), true};
}

OutputChunk OutputTextEncoder::flush() {
  if (held_.empty()) return {};
  OutputChunk out{base64_encode(held_), true};
  held_.clear();
  return out;
}

}  // namespace lockroom::core
