// TlsStream: one TLS connection run over memory buffers, with no socket of its own.
//
// The proxy moves bytes: what arrives from the peer's socket goes into feed_ciphertext(), what
// take_ciphertext() returns goes out to the peer's socket; the application side uses
// write_plaintext() / read_plaintext(). Two roles:
//   accept():  the server toward the guest. Presents the sandbox CA's leaf for the name the
//              guest's client sent in SNI (or `fallback_name`, the CONNECT target, when it sent
//              none), after `check_name` (if given) allowed it; ALPN http/1.1 only.
//   connect(): the client toward upstream. Sends SNI (for host names), verifies the chain against
//              the client context's trust and the certificate against `host` (DNS name or IP).
// Errors say what failed in words: the verify error ("certificate has expired"), the alert
// ("received alert: unknown CA"), or OpenSSL's reason. After a failure take_ciphertext() may
// still hold an alert worth sending before closing the socket.
//
// Buffers are bounded by Limits: when wants_ciphertext() turns false the caller stops reading
// its socket until read_plaintext() has drained some; feeding far past that is an error.
// Loop thread only; nothing here blocks or throws.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/egress/tls/openssl_util.h"
#include "server/egress/tls/tls_contexts.h"

namespace lockroom::egress::tls {

struct TlsLimits {
  std::size_t buffered = 256u << 10;  // decrypted-but-unread or received-but-undecrypted bytes past
                                      // which wants_ciphertext() is false; feeding (or writing)
                                      // more than 4x this is refused
};

class TlsStream {
 public:
  enum class Role { kServer, kClient };
  enum class State { kHandshaking, kOpen, kClosed, kFailed };

  using Limits = TlsLimits;
  using NameCheck = std::function<Result<void>(const std::string& name)>;

  static Result<std::unique_ptr<TlsStream>> accept(std::shared_ptr<TlsServerContext> context, std::string fallback_name,
                                                   NameCheck check_name = {}, Limits limits = {});
  static Result<std::unique_ptr<TlsStream>> connect(std::shared_ptr<TlsClientContext> context, std::string host,
                                                    Limits limits = {});
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Bytes from the peer. Drives the handshake and decrypts what it can. An error means the
  // connection failed (see error()) or the caller fed past the bound.
  Result<void> feed_ciphertext(std::string_view bytes);
  // Bytes for the peer (handshake records, encrypted data, alerts, close_notify), taken out.
  std::string take_ciphertext();
  std::size_t ciphertext_pending() const;

  // Encrypts `bytes` for the peer (held until the handshake is done; bounded like the input).
  Result<void> write_plaintext(std::string_view bytes);
  // Up to `max` decrypted bytes, taken out. Decrypting what waited behind them can find the
  // connection broken: check state() afterwards.
  std::string read_plaintext(std::size_t max = std::numeric_limits<std::size_t>::max());
  std::size_t plaintext_available() const { return plaintext_in_.size(); }
  bool wants_ciphertext() const;

  // Sends close_notify; nothing more can be written.
  void close();

  Role role() const { return role_; }
  State state() const { return state_; }
  bool handshake_done() const { return state_ == State::kOpen || (state_ == State::kClosed && handshaken_); }
  bool peer_closed() const { return peer_closed_; }  // the peer sent close_notify
  const std::string& error() const { return error_; }
  // Server: the name the certificate was made for; client: the host verified.
  const std::string& peer_name() const { return name_; }
  bool client_sent_sni() const { return sni_sent_; }
  std::string alpn() const;           // "http/1.1" or empty
  std::string protocol_version() const;  // "TLSv1.3", ...

 private:
  TlsStream(Role role, SslPtr ssl, Limits limits);
  static int choose_certificate(SSL* ssl, void* arg);
  static void on_info(const SSL* ssl, int where, int value);
  void pump();
  void fail(int ssl_error);
  std::string describe_failure(int ssl_error);

  Role role_;
  SslPtr ssl_;
  BIO* in_ = nullptr;   // owned by ssl_
  BIO* out_ = nullptr;  // owned by ssl_
  Limits limits_;
  std::shared_ptr<TlsServerContext> server_context_;
  std::shared_ptr<TlsClientContext> client_context_;
  NameCheck check_name_;
  std::string fallback_name_;
  std::string name_;
  std::string name_error_;
  std::string alert_;
  std::string pending_out_;   // plaintext written before the handshake finished
  std::string plaintext_in_;
  std::string error_;
  State state_ = State::kHandshaking;
  bool handshaken_ = false;
  bool sni_sent_ = false;
  bool peer_closed_ = false;
};

const char* to_string(TlsStream::State state);

}  // namespace lockroom::egress::tls
