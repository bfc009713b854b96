// The SOCKS5 handshake; see net_socks.h.
#include "guest/net_socks.h"

#include <arpa/inet.h>

namespace lockroom::agent {

namespace socks_reply_code = protocol::channel::socks_reply;

namespace {
constexpr std::uint8_t kVersion = 0x05;
constexpr std::uint8_t kNoAuth = 0x00;
constexpr std::uint8_t kNoAcceptableMethod = 0xff;
constexpr std::uint8_t kConnect = 0x01;
constexpr std::uint8_t kIpv4 = 0x01;
constexpr std::uint8_t kDomain = 0x03;
constexpr std::uint8_t kIpv6 = 0x04;

std::uint8_t at(const std::string& s, std::size_t i) { return static_cast<std::uint8_t>(s[i]); }

bool printable_host(std::string_view host) {
  if (host.empty()) return false;
  for (unsigned char c : host)
    if (c <= 0x20 || c >= 0x7f) return false;
  return true;
}
}  // namespace

std::string socks_reply(std::uint8_t code) {
  return std::string{static_cast<char>(kVersion), static_cast<char>(code), 0, static_cast<char>(kIpv4), 0, 0, 0, 0, 0, 0};
}

SocksHandshake::Outcome SocksHandshake::feed(std::string_view bytes) {
  Outcome out;
  if (phase_ == Phase::kDone) {
    out.step = Step::kFail;
    out.why = "bytes after the SOCKS request was complete";
    return out;
  }
  if (buffer_.size() + bytes.size() > kMaxBuffered) {
    out.step = Step::kFail;
    out.why = "the SOCKS handshake is longer than " + std::to_string(kMaxBuffered) + " bytes";
    return out;
  }
  buffer_.append(bytes);
  if (phase_ == Phase::kGreeting) {
    out = greeting();
    if (out.step != Step::kNeedMore || phase_ == Phase::kGreeting) return out;
    if (buffer_.empty()) return out;
    // The client sent its request right behind the greeting.
    Outcome next = request();
    next.reply = out.reply + next.reply;
    return next;
  }
  return request();
}

SocksHandshake::Outcome SocksHandshake::greeting() {
  Outcome out;
  if (buffer_.empty()) return out;
  if (at(buffer_, 0) != kVersion) {
    out.step = Step::kFail;
    out.why = "not a SOCKS5 greeting (version byte " + std::to_string(at(buffer_, 0)) + ")";
    return out;
  }
  if (buffer_.size() < 2) return out;
  std::size_t methods = at(buffer_, 1);
  if (buffer_.size() < 2 + methods) return out;
  bool no_auth = false;
  for (std::size_t i = 0; i < methods; ++i) no_auth = no_auth || at(buffer_, 2 + i) == kNoAuth;
  if (!no_auth) {
    out.step = Step::kFail;
    out.reply = std::string{static_cast<char>(kVersion), static_cast<char>(kNoAcceptableMethod)};
    out.why = "the SOCKS client does not offer \"no authentication\"";
    return out;
  }
  out.reply = std::string{static_cast<char>(kVersion), static_cast<char>(kNoAuth)};
  buffer_.erase(0, 2 + methods);
  phase_ = Phase::kRequest;
  return out;
}

SocksHandshake::Outcome SocksHandshake::request() {
  Outcome out;
  if (buffer_.size() < 5) return out;
  auto fail = [&out](std::uint8_t code, std::string why) {
    out.step = Step::kFail;
    out.reply = socks_reply(code);
    out.why = std::move(why);
    return out;
  };
  if (at(buffer_, 0) != kVersion) {
    out.step = Step::kFail;
    out.why = "not a SOCKS5 request (version byte " + std::to_string(at(buffer_, 0)) + ")";
    return out;
  }
  std::uint8_t command = at(buffer_, 1);
  std::uint8_t type = at(buffer_, 3);
  std::size_t address = 0;
  std::size_t start = 4;
  if (type == kIpv4) {
    address = 4;
  } else if (type == kIpv6) {
    address = 16;
  } else if (type == kDomain) {
    address = at(buffer_, 4);
    start = 5;
  } else {
    return fail(socks_reply_code::kAddressTypeNotSupported, "unknown SOCKS address type " + std::to_string(type));
  }
  std::size_t total = start + address + 2;
  if (buffer_.size() < total) return out;
  if (command != kConnect)
    return fail(socks_reply_code::kCommandNotSupported, "SOCKS command " + std::to_string(command) + " (only CONNECT is offered)");
  protocol::channel::NetTarget target;
  if (type == kDomain) {
    target.host = buffer_.substr(start, address);
    if (!printable_host(target.host)) return fail(socks_reply_code::kHostUnreachable, "a SOCKS domain name with unprintable bytes");
  } else {
    char text[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(type == kIpv4 ? AF_INET : AF_INET6, buffer_.data() + start, text, sizeof text);
    target.host = text;
  }
  target.port = at(buffer_, start + address) << 8 | at(buffer_, start + address + 1);
  if (target.port == 0) return fail(socks_reply_code::kHostUnreachable, "SOCKS target port 0");
  out.step = Step::kTarget;
  out.target = std::move(target);
  out.extra = buffer_.substr(total);
  buffer_.clear();
  phase_ = Phase::kDone;
  return out;
}

}  // namespace lockroom::agent
