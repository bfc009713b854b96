// SocksHandshake: the agent's side of a SOCKS5 handshake (RFC 1928), as pure code.
//
// Only what a proxy client needs to name its target: the greeting with method 0x00 ("no
// authentication"), then one CONNECT request with an IPv4, IPv6 or domain-name address. BIND and
// UDP ASSOCIATE get reply 0x07, an unknown address type 0x08, a greeting without method 0x00 gets
// 0x05 0xFF; any of these ends the connection. The handshake holds at most kMaxBuffered bytes
// (the longest greeting is 257 bytes, the longest request 262), so a client cannot make it grow.
// Used by guest/net_connection.cpp; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

class SocksHandshake {
 public:
  static constexpr std::size_t kMaxBuffered = 512;

  enum class Step {
    kNeedMore,  // send `reply` (may be empty) and read on
    kTarget,    // the request is complete: `target` holds it; `extra` is what the client sent after it
    kFail,      // send `reply` (may be empty) and close; `why` says what was wrong
  };
  struct Outcome {
    Step step = Step::kNeedMore;
    std::string reply;
    std::optional<protocol::channel::NetTarget> target;
    std::string extra;
    std::string why;
  };

  Outcome feed(std::string_view bytes);

 private:
  Outcome greeting();
  Outcome request();

  enum class Phase { kGreeting, kRequest, kDone } phase_ = Phase::kGreeting;
  std::string buffer_;
};

// The 10-byte SOCKS5 reply with `code` and bound address 0.0.0.0:0.
std::string socks_reply(std::uint8_t code);

}  // namespace lockroom::agent
