// Sentinels: the stand-in values the guest sees instead of its secrets.
//
// A secret called `github_token` has the sentinel `LOCKROOM_SECRET_GITHUB_TOKEN` (the name
// uppercased; names are letters, digits and '_'). The guest finds the sentinel in the
// environment variable its tool reads; the host swaps it for the real value only on requests to
// the secret's hosts (secrets.h), and treats a sentinel going anywhere else as an exfiltration
// attempt.
//
// Matching: at each place the common prefix `LOCKROOM_SECRET_` occurs, the longest known
// sentinel that matches there counts (so GH and GH_TOKEN are told apart). find_sentinels() works
// on a whole string; SentinelScanner finds the same matches in a stream split at arbitrary
// points, keeping only the last (longest sentinel - 1) bytes between pieces.
//
// Pure; no I/O. Not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lockroom::egress {

// The most of a request body the proxy holds to screen it for sentinels before anything of the
// request is sent (a body to a host outside some secret's scope; engine/http_relay.h). Larger
// bodies to such hosts are refused (413).
inline constexpr std::size_t kMaxScreenedBody = std::size_t(8) << 20;

inline constexpr std::string_view kSentinelPrefix = "LOCKROOM_SECRET_";
constexpr std::size_t kMaxSecretNameLength = 64;

// Letters, digits and '_', 1-64 characters.
bool is_valid_secret_name(std::string_view name);
std::string sentinel_for(std::string_view name);  // LOCKROOM_SECRET_<NAME uppercased>

struct SentinelMatch {
  std::size_t offset = 0;   // in the text (for the scanner: in the whole stream)
  std::size_t length = 0;
  std::size_t sentinel = 0;  // index into the list given
};

// Every match, left to right (a match inside a longer one's tail is still reported).
std::vector<SentinelMatch> find_sentinels(std::string_view text, const std::vector<std::string>& sentinels);

class SentinelScanner {
 public:
  explicit SentinelScanner(std::vector<std::string> sentinels);

  // The matches completed by this piece (offsets count from the start of the stream).
  std::vector<SentinelMatch> feed(std::string_view data);
  // End of stream: matches in the bytes held back for lookahead.
  std::vector<SentinelMatch> finish();
  std::size_t held_bytes() const { return carry_.size(); }

 private:
  // Matches that start in [0, limit) of `window`, offset by `base`.
  void scan(std::string_view window, std::size_t limit, std::size_t base, std::vector<SentinelMatch>& out) const;

  std::vector<std::string> sentinels_;
  std::size_t lookahead_ = 0;  // longest sentinel - 1
  std::string carry_;          // the last bytes seen, whose matches are not yet decided
  std::size_t carry_offset_ = 0;  // stream offset of carry_[0]
};

}  // namespace lockroom::egress
