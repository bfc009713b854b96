// Sentinel names and matching; see sentinel.h.
#include "server/egress/policy/sentinel.h"

#include <algorithm>

namespace lockroom::egress {

bool is_valid_secret_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSecretNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string sentinel_for(std::string_view name) {
  std::string out(kSentinelPrefix);
  for (char c : name) out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  return out;
}

namespace {
// The longest sentinel that matches at `at` in `text`, if any.
bool longest_match_at(std::string_view text, std::size_t at, const std::vector<std::string>& sentinels, SentinelMatch& match) {
  bool found = false;
  for (std::size_t i = 0; i < sentinels.size(); ++i) {
    const std::string& s = sentinels[i];
    if (text.size() - at >= s.size() && text.compare(at, s.size(), s) == 0 && (!found || s.size() > match.length)) {
      match = SentinelMatch{at, s.size(), i};
      found = true;
    }
  }
  return found;
}
}  // namespace

std::vector<SentinelMatch> find_sentinels(std::string_view text, const std::vector<std::string>& sentinels) {
  std::vector<SentinelMatch> out;
  if (sentinels.empty()) return out;
  for (std::size_t at = text.find(kSentinelPrefix); at != std::string_view::npos; at = text.find(kSentinelPrefix, at + 1)) {
    SentinelMatch match;
    if (longest_match_at(text, at, sentinels, match)) out.push_back(match);
  }
  return out;
}

SentinelScanner::SentinelScanner(std::vector<std::string> sentinels) : sentinels_(std::move(sentinels)) {
  for (const std::string& s : sentinels_) lookahead_ = std::max(lookahead_, s.size() - 1);
}

void SentinelScanner::scan(std::string_view window, std::size_t limit, std::size_t base, std::vector<SentinelMatch>& out) const {
  for (std::size_t at = window.find(kSentinelPrefix); at != std::string_view::npos && at < limit;
       at = window.find(kSentinelPrefix, at + 1)) {
    SentinelMatch match;
    if (longest_match_at(window, at, sentinels_, match)) {
      match.offset += base;
      out.push_back(match);
    }
  }
}

std::vector<SentinelMatch> SentinelScanner::feed(std::string_view data) {
  std::vector<SentinelMatch> out;
  if (sentinels_.empty() || data.empty()) return out;
  // A match is decided once `lookahead_` bytes after its start are known (or the stream ends).
  // Starts in the carry: look at the carry plus the first bytes of `data`.
  std::string head = carry_;
  head.append(data.substr(0, lookahead_));
  std::size_t decided_in_head = head.size() > lookahead_ ? head.size() - lookahead_ : 0;
  scan(head, std::min(decided_in_head, carry_.size()), carry_offset_, out);
  std::size_t data_offset = carry_offset_ + carry_.size();
  // Starts in `data` with enough lookahead inside `data` itself.
  if (data.size() > lookahead_) scan(data, data.size() - lookahead_, data_offset, out);
  // Keep the undecided tail: the last `lookahead_` bytes of carry + data.
  std::size_t total = carry_.size() + data.size();
  std::size_t keep = std::min(total, lookahead_);
  std::string next_carry = head.size() >= keep && data.size() <= lookahead_ ? head.substr(head.size() - keep)
                                                                             : std::string(data.substr(data.size() - keep));
  carry_offset_ += total - keep;
  carry_ = std::move(next_carry);
  return out;
}

std::vector<SentinelMatch> SentinelScanner::finish() {
  std::vector<SentinelMatch> out;
  scan(carry_, carry_.size(), carry_offset_, out);
  carry_offset_ += carry_.size();
  carry_.clear();
  return out;
}

}  // namespace lockroom::egress
