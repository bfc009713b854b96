// ClientHello parsing; see tls_client_hello.h. Formats: RFC 8446 5.1 (records), 4.1.2
// (ClientHello), 4.2 (extensions); RFC 6066 3 (server_name); RFC 7301 3.1 (ALPN).
#include "server/egress/policy/tls_client_hello.h"

#include <set>

#include "server/egress/policy/host_name.h"

namespace lockroom::egress {

namespace {

constexpr std::uint8_t kHandshakeRecord = 22;
constexpr std::uint8_t kClientHelloType = 1;
constexpr std::size_t kRecordHeader = 5;
constexpr std::size_t kMaxRecordPayload = 16384 + 2048;  // TLSCiphertext bound; plaintext is 2^14
constexpr std::uint16_t kExtServerName = 0;
constexpr std::uint16_t kExtAlpn = 16;
constexpr std::uint16_t kExtSupportedVersions = 43;
constexpr std::uint16_t kExtEncryptedClientHello = 0xfe0d;

// Reads big-endian fields from a byte range; any read past the end sets `failed`.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool failed() const { return failed_; }
  bool empty() const { return pos_ >= data_.size(); }
  std::size_t remaining() const { return failed_ ? 0 : data_.size() - pos_; }

  std::uint32_t number(int bytes) {
    if (remaining() < static_cast<std::size_t>(bytes)) {
      failed_ = true;
      return 0;
    }
    std::uint32_t value = 0;
    for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<std::uint8_t>(data_[pos_++]);
    return value;
  }
  std::string_view bytes(std::size_t count) {
    if (remaining() < count) {
      failed_ = true;
      return {};
    }
    std::string_view out = data_.substr(pos_, count);
    pos_ += count;
    return out;
  }
  // A vector with a `length_bytes`-byte length prefix.
  std::string_view vector(int length_bytes) { return bytes(number(length_bytes)); }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

ClientHelloResult malformed(std::string error) {
  ClientHelloResult r;
  r.status = ClientHelloStatus::kMalformed;
  r.error = std::move(error);
  return r;
}

std::string parse_server_name(std::string_view data, ClientHelloInfo& info) {
  Reader ext(data);
  Reader list(ext.vector(2));
  if (ext.failed() || !ext.empty()) return "server_name extension has a bad length";
  bool seen_host_name = false;
  while (!list.empty()) {
    std::uint32_t type = list.number(1);
    std::string_view name = list.vector(2);
    if (list.failed()) return "server_name list has a bad length";
    if (type != 0) continue;  // only host_name is defined; others are skipped
    if (seen_host_name) return "server_name has more than one host_name";
    seen_host_name = true;
    if (name.empty()) return "server_name is empty";
    if (looks_like_ip_literal(name)) return "server_name is an IP address, which SNI does not allow";
    Result<std::string> normal = normalize_host_name(name);
    if (!normal) return "server_name: " + normal.error().message;
    info.sni = std::move(*normal);
  }
  return "";
}

std::string parse_alpn(std::string_view data, ClientHelloInfo& info) {
  Reader ext(data);
  Reader list(ext.vector(2));
  if (ext.failed() || !ext.empty()) return "ALPN extension has a bad length";
  if (list.empty()) return "ALPN list is empty";
  while (!list.empty()) {
    std::string_view protocol = list.vector(1);
    if (list.failed()) return "ALPN list has a bad length";
    if (protocol.empty()) return "ALPN list has an empty protocol name";
    info.alpn.emplace_back(protocol);
  }
  return "";
}

std::string parse_supported_versions(std::string_view data, ClientHelloInfo& info) {
  Reader ext(data);
  Reader list(ext.vector(1));
  if (ext.failed() || !ext.empty()) return "supported_versions extension has a bad length";
  while (!list.empty()) {
    if (list.number(2) == 0x0304) info.offers_tls13 = true;
  }
  if (list.failed()) return "supported_versions list has an odd length";
  return "";
}

ClientHelloResult parse_body(std::string_view body) {
  ClientHelloResult result;
  ClientHelloInfo& info = result.info;
  Reader r(body);
  info.legacy_version = static_cast<std::uint16_t>(r.number(2));
  r.bytes(32);  // random
  std::string_view session_id = r.vector(1);
  std::string_view cipher_suites = r.vector(2);
  std::string_view compression = r.vector(1);
  if (r.failed()) return malformed("ClientHello is shorter than its fixed fields");
  if (session_id.size() > 32) return malformed("ClientHello session id is longer than 32 bytes");
  if (cipher_suites.empty() || cipher_suites.size() % 2 != 0) return malformed("ClientHello cipher suite list is empty or odd");
  if (compression.empty()) return malformed("ClientHello compression method list is empty");
  if (!r.empty()) {
    std::string_view extensions_data = r.vector(2);
    if (r.failed() || !r.empty()) return malformed("ClientHello extensions have a bad length");
    Reader extensions(extensions_data);
    std::set<std::uint32_t> seen;
    while (!extensions.empty()) {
      std::uint32_t type = extensions.number(2);
      std::string_view data = extensions.vector(2);
      if (extensions.failed()) return malformed("ClientHello extension has a bad length");
      if (!seen.insert(type).second) return malformed("ClientHello repeats extension " + std::to_string(type));
      std::string problem;
      if (type == kExtServerName) problem = parse_server_name(data, info);
      else if (type == kExtAlpn) problem = parse_alpn(data, info);
      else if (type == kExtSupportedVersions) problem = parse_supported_versions(data, info);
      else if (type == kExtEncryptedClientHello) info.encrypted_client_hello = true;
      if (!problem.empty()) return malformed(problem);
    }
  }
  result.status = ClientHelloStatus::kComplete;
  return result;
}

}  // namespace

ClientHelloResult ClientHelloReader::feed(std::string_view data) {
  if (decided_) return *decided_;
  auto decide = [&](ClientHelloResult result) {
    decided_ = std::move(result);
    pending_.clear();
    handshake_.clear();
    return *decided_;
  };
  if (seen_ + data.size() > kMaxClientHelloBytes) data = data.substr(0, kMaxClientHelloBytes - seen_);
  seen_ += data.size();
  pending_.append(data);
  // Move each complete handshake record's payload to handshake_ until the message is whole.
  std::size_t pos = 0;
  while (pending_.size() > pos) {
    auto type = static_cast<std::uint8_t>(pending_[pos]);
    bool version_known = pending_.size() - pos >= 2;
    if (type != kHandshakeRecord || (version_known && static_cast<std::uint8_t>(pending_[pos + 1]) != 3)) {
      if (records_ == 0) {
        ClientHelloResult not_tls;
        not_tls.status = ClientHelloStatus::kNotTls;
        not_tls.error = "the first bytes are not a TLS handshake record";
        return decide(std::move(not_tls));
      }
      return decide(malformed("a non-handshake record arrived in the middle of the ClientHello"));
    }
    if (pending_.size() - pos < kRecordHeader) break;
    std::size_t length = (static_cast<std::uint8_t>(pending_[pos + 3]) << 8) | static_cast<std::uint8_t>(pending_[pos + 4]);
    if (length == 0 || length > kMaxRecordPayload) {
      return decide(malformed("TLS record length " + std::to_string(length) + " is out of range"));
    }
    if (pending_.size() - pos - kRecordHeader < length) break;
    handshake_.append(pending_, pos + kRecordHeader, length);
    pos += kRecordHeader + length;
    record_bytes_ += kRecordHeader + length;
    ++records_;
    if (handshake_.size() < 4) continue;
    if (static_cast<std::uint8_t>(handshake_[0]) != kClientHelloType) {
      return decide(malformed("the first handshake message is type " +
                              std::to_string(static_cast<std::uint8_t>(handshake_[0])) + ", not ClientHello"));
    }
    std::size_t message_length = (static_cast<std::uint8_t>(handshake_[1]) << 16) |
                                 (static_cast<std::uint8_t>(handshake_[2]) << 8) | static_cast<std::uint8_t>(handshake_[3]);
    if (message_length + 4 > kMaxClientHelloBytes) return decide(malformed("ClientHello is larger than 64 KiB"));
    if (handshake_.size() < message_length + 4) continue;
    if (handshake_.size() > message_length + 4) {
      return decide(malformed("the records carrying the ClientHello also carry other handshake data"));
    }
    ClientHelloResult result = parse_body(std::string_view(handshake_).substr(4, message_length));
    if (result.status == ClientHelloStatus::kComplete) result.length = record_bytes_;
    return decide(std::move(result));
  }
  pending_.erase(0, pos);
  if (seen_ >= kMaxClientHelloBytes) return decide(malformed("ClientHello is larger than 64 KiB"));
  return {};
}

ClientHelloResult parse_client_hello(std::string_view bytes) { return ClientHelloReader().feed(bytes); }

const char* client_hello_status_name(ClientHelloStatus status) {
  switch (status) {
    case ClientHelloStatus::kNeedMore: return "need more";
    case ClientHelloStatus::kNotTls: return "not TLS";
    case ClientHelloStatus::kMalformed: return "malformed";
    case ClientHelloStatus::kComplete: return "complete";
  }
  return "unknown";
}

}  // namespace lockroom::egress
