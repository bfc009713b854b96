// net.* messages: the guest's loopback proxies, its connections as streams, SOCKS replies.
// Part of the agent's message set; include protocol/channel/messages.h, which brings every part.
#pragma once

#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

// ---- net.* (protocol/channel.md, "Network"; JSON in messages_net.cpp)
//
// The guest has no network interface. After net.enable the agent listens on loopback as an HTTP
// proxy and a SOCKS5 proxy; each accepted TCP connection becomes an agent-opened stream announced
// by the notification net.connection. The host decides: HTTP bytes reach it unparsed (it answers
// the client itself); a SOCKS connection waits for net.accept or net.refuse. net.trust installs
// the host's CA certificate (never its key) for processes started afterwards.
namespace method {
inline constexpr const char* kNetEnable = "net.enable";
inline constexpr const char* kNetTrust = "net.trust";
inline constexpr const char* kNetAccept = "net.accept";
inline constexpr const char* kNetRefuse = "net.refuse";
inline constexpr const char* kNetConnection = "net.connection";  // notification, agent → host
}  // namespace method

inline constexpr std::int64_t kMaxPort = 65535;
inline constexpr std::int64_t kMaxNetConnections = 4096;   // the most either side lets net.enable ask for
inline constexpr std::size_t kMaxTargetHost = 255;          // a DNS name (SOCKS5 carries at most 255 bytes)
inline constexpr std::size_t kMaxCertificatePem = 64u << 10;
inline constexpr std::size_t kMaxRefuseReason = 256;
inline constexpr std::size_t kMaxClientCommand = 256;       // the guest program's command line, as the agent clips it
inline constexpr std::int64_t kMaxGuestPid = 4194304;        // Linux's PID_MAX_LIMIT

// SOCKS5 reply codes (RFC 1928 section 6) the host may choose in net.refuse.
namespace socks_reply {
inline constexpr std::uint8_t kSucceeded = 0x00;
inline constexpr std::uint8_t kGeneralFailure = 0x01;
inline constexpr std::uint8_t kNotAllowed = 0x02;          // "connection not allowed by ruleset"
inline constexpr std::uint8_t kNetworkUnreachable = 0x03;
inline constexpr std::uint8_t kHostUnreachable = 0x04;
inline constexpr std::uint8_t kConnectionRefused = 0x05;
inline constexpr std::uint8_t kTtlExpired = 0x06;
inline constexpr std::uint8_t kCommandNotSupported = 0x07;
inline constexpr std::uint8_t kAddressTypeNotSupported = 0x08;
}  // namespace socks_reply

// Ports the agent listens on (all on 127.0.0.1). In params, an absent port keeps the agent's own
// setting (kernel command line or flag); 0 asks for any free port. In the result, the ports bound
// (0 for a listener that is off: only the DNS refuser can be).
struct NetEnableParams {
  std::optional<std::int64_t> http;
  std::optional<std::int64_t> socks;
  std::optional<std::int64_t> max_connections;
};
struct NetEnableResult {
  std::int64_t http = 0;
  std::int64_t socks = 0;
  std::int64_t dns = 0;
  std::int64_t max_connections = 0;
};

struct NetTarget {
  std::string host;  // a DNS name, or an IPv4 / IPv6 address in text form (no brackets)
  std::int64_t port = 0;
};
enum class NetKind { kHttp, kSocks };
struct NetConnection {
  std::uint32_t stream = 0;
  NetKind kind = NetKind::kHttp;
  std::optional<NetTarget> target;  // socks only (required there)
  std::int64_t client_port = 0;     // the guest program's source port
  // The guest program that opened the connection, when the agent found it (informative only:
  // never used for a decision). `started` is the pid of its ancestor that the agent started
  // (process.start), when there is one.
  std::optional<std::int64_t> client_pid;
  std::string client_command;  // printable ASCII, at most kMaxClientCommand bytes; empty without a pid
  std::optional<std::int64_t> client_started;
};

struct NetAcceptParams {
  std::uint32_t stream = 0;
};
struct NetRefuseParams {
  std::uint32_t stream = 0;
  std::string reason;
  std::uint8_t socks_code = socks_reply::kNotAllowed;  // 0x01..0x08
};

struct NetTrustParams {
  std::string pem;  // one or more PEM certificates, at most kMaxCertificatePem bytes
};
struct NetTrustResult {
  std::string certificate;  // where the CA certificate was written
  std::string bundle;       // the system bundle plus the CA: what SSL_CERT_FILE and friends name
};

const char* net_kind_name(NetKind kind);

json to_json(const NetEnableParams& v);
json to_json(const NetEnableResult& v);
json to_json(const NetConnection& v);
json to_json(const NetAcceptParams& v);
json to_json(const NetRefuseParams& v);
json to_json(const NetTrustParams& v);
json to_json(const NetTrustResult& v);

Result<NetEnableParams> parse_net_enable_params(const json& j);
Result<NetEnableResult> parse_net_enable_result(const json& j);
// Checks the announcement as hostile input: an even stream id, a known kind, a target exactly
// for socks with a host of printable characters and a port in 1..65535; the client's pid (and
// started) 1..kMaxGuestPid, its command printable ASCII of at most kMaxClientCommand bytes.
Result<NetConnection> parse_net_connection(const json& j);
Result<NetAcceptParams> parse_net_accept_params(const json& j);
Result<NetRefuseParams> parse_net_refuse_params(const json& j);
Result<NetTrustParams> parse_net_trust_params(const json& j);
Result<NetTrustResult> parse_net_trust_result(const json& j);

}  // namespace lockroom::protocol::channel
