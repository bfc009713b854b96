// The first bytes of a CONNECT tunnel: is it TLS, and if so which server name (SNI) and which
// application protocols (ALPN) does the client ask for?
//
// The proxy checks the SNI against the policy as well as the CONNECT target, and uses the ALPN
// list when it terminates TLS. parse_client_hello() is given all the bytes the client has sent so
// far and answers (ClientHelloReader is the same, fed piece by piece as bytes arrive, each byte
// looked at once; the caller still keeps the bytes to forward them):
//   kNeedMore   a prefix of a TLS ClientHello; wait for more bytes
//   kNotTls     not a TLS handshake record (plain TCP, SSLv2, HTTP, ...)
//   kMalformed  starts like TLS but breaks the format (error says where) or is too large
//   kComplete   the ClientHello, possibly spread over several TLS records
// Hostile input: every length is checked against what is left, the handshake message against
// the bound, duplicate extensions are refused (RFC 8446 4.2), and the SNI must be a valid DNS
// host name (RFC 6066: not an IP literal). An Encrypted Client Hello is reported: its outer SNI
// is only the public name of the client-facing server, not the real destination.
//
// Pure; no I/O. Any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockroom::egress {

constexpr std::size_t kMaxClientHelloBytes = 64 * 1024;

enum class ClientHelloStatus { kNeedMore, kNotTls, kMalformed, kComplete };

struct ClientHelloInfo {
  std::optional<std::string> sni;  // normalised host name (lowercase, no trailing dot)
  std::vector<std::string> alpn;   // in the client's order
  std::uint16_t legacy_version = 0;
  bool offers_tls13 = false;            // supported_versions lists 0x0304
  bool encrypted_client_hello = false;  // ECH extension present
};

struct ClientHelloResult {
  ClientHelloStatus status = ClientHelloStatus::kNeedMore;
  ClientHelloInfo info;  // for kComplete
  std::string error;     // for kMalformed and kNotTls
  std::size_t length = 0;  // for kComplete: bytes of records that carried the ClientHello
};

ClientHelloResult parse_client_hello(std::string_view bytes);

class ClientHelloReader {
 public:
  // kNeedMore until the answer is known; then that answer, whatever is fed after it.
  ClientHelloResult feed(std::string_view data);

 private:
  std::string pending_;    // the start of a record not yet complete
  std::string handshake_;  // payloads of the complete handshake records so far
  std::size_t seen_ = 0;
  std::size_t record_bytes_ = 0;
  std::size_t records_ = 0;
  std::optional<ClientHelloResult> decided_;
};
const char* client_hello_status_name(ClientHelloStatus status);

}  // namespace lockroom::egress
