// TlsStream; see tls_stream.h.
#include "server/egress/tls/tls_stream.h"

#include <openssl/err.h>

#include <algorithm>

namespace lockroom::egress::tls {

namespace {

constexpr std::size_t kReadChunk = 16u << 10;  // one TLS record's worth
constexpr std::size_t kOverfeedFactor = 4;

bool is_retry(int ssl_error) { return ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE; }

}  // namespace

const char* to_string(TlsStream::State state) {
  switch (state) {
    case TlsStream::State::kHandshaking: return "handshaking";
    case TlsStream::State::kOpen: return "open";
    case TlsStream::State::kClosed: return "closed";
    case TlsStream::State::kFailed: return "failed";
  }
  return "?";
}

TlsStream::TlsStream(Role role, SslPtr ssl, Limits limits) : role_(role), ssl_(std::move(ssl)), limits_(limits) {
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in_, -1);  // no bytes yet means "wait", not end of stream
  SSL_set_bio(ssl_.get(), in_, out_);
  SSL_set_app_data(ssl_.get(), this);
  SSL_set_info_callback(ssl_.get(), on_info);
}

TlsStream::~TlsStream() = default;

Result<std::unique_ptr<TlsStream>> TlsStream::accept(std::shared_ptr<TlsServerContext> context, std::string fallback_name,
                                                     NameCheck check_name, Limits limits) {
  if (!context) return make_error(ErrorCode::kInvalidInput, "a TLS server stream needs a server context");
  SslPtr ssl(SSL_new(context->get()));
  if (!ssl) return make_error(ErrorCode::kInternal, "cannot create a TLS server connection: " + take_openssl_errors());
  std::unique_ptr<TlsStream> stream(new TlsStream(Role::kServer, std::move(ssl), limits));
  if (!stream->in_ || !stream->out_) return make_error(ErrorCode::kInternal, "cannot create TLS memory buffers");
  stream->server_context_ = std::move(context);
  stream->fallback_name_ = std::move(fallback_name);
  stream->check_name_ = std::move(check_name);
  SSL_set_cert_cb(stream->ssl_.get(), choose_certificate, stream.get());
  SSL_set_accept_state(stream->ssl_.get());
  return stream;
}

Result<std::unique_ptr<TlsStream>> TlsStream::connect(std::shared_ptr<TlsClientContext> context, std::string host,
                                                      Limits limits) {
  if (!context) return make_error(ErrorCode::kInvalidInput, "a TLS client stream needs a client context");
  auto name = normalise_cert_name(host);
  if (!name) return name.error();
  SslPtr ssl(SSL_new(context->get()));
  if (!ssl) return make_error(ErrorCode::kInternal, "cannot create a TLS client connection: " + take_openssl_errors());
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
  bool named = false;
  if (parse_ip_literal(*name)) {
    named = X509_VERIFY_PARAM_set1_ip_asc(param, name->c_str()) == 1;
  } else {
    SSL_set_hostflags(ssl.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    named = SSL_set_tlsext_host_name(ssl.get(), name->c_str()) == 1 && SSL_set1_host(ssl.get(), name->c_str()) == 1;
  }
  if (!named) return make_error(ErrorCode::kInternal, "cannot set the TLS host name " + *name + ": " + take_openssl_errors());
  std::unique_ptr<TlsStream> stream(new TlsStream(Role::kClient, std::move(ssl), limits));
  if (!stream->in_ || !stream->out_) return make_error(ErrorCode::kInternal, "cannot create TLS memory buffers");
  stream->client_context_ = std::move(context);
  stream->name_ = std::move(*name);
  SSL_set_connect_state(stream->ssl_.get());
  stream->pump();  // the ClientHello
  if (stream->state_ == State::kFailed) return make_error(ErrorCode::kInternal, stream->error_);
  return stream;
}

int TlsStream::choose_certificate(SSL* ssl, void* arg) {
  auto* self = static_cast<TlsStream*>(arg);
  if (!self->name_.empty()) return 1;  // already chosen (the callback can run again)
  const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  self->sni_sent_ = sni != nullptr;
  std::string requested = sni ? sni : self->fallback_name_;
  if (requested.empty()) {
    self->name_error_ = "the client sent no server name (SNI) and there is no CONNECT host to fall back on";
    return 0;
  }
  auto name = normalise_cert_name(requested);
  if (!name) {
    self->name_error_ = name.error().message;
    return 0;
  }
  if (self->check_name_) {
    Result<void> allowed = make_error(ErrorCode::kInternal, "the server name check failed unexpectedly");
    try {
      allowed = self->check_name_(*name);
    } catch (...) {
    }
    if (!allowed) {
      self->name_error_ = allowed.error().message;
      return 0;
    }
  }
  auto leaf = self->server_context_->leaves().get(*name);
  if (!leaf) {
    self->name_error_ = leaf.error().message;
    return 0;
  }
  if (SSL_use_cert_and_key(ssl, (*leaf)->cert.get(), (*leaf)->key.get(), nullptr, 1) != 1) {
    self->name_error_ = "cannot use the certificate for " + *name + ": " + take_openssl_errors();
    return 0;
  }
  self->name_ = *name;
  return 1;
}

void TlsStream::on_info(const SSL* ssl, int where, int value) {
  if (!(where & SSL_CB_READ_ALERT)) return;
  auto* self = static_cast<TlsStream*>(SSL_get_app_data(ssl));
  if (!self || (value & 0xff) == SSL_AD_CLOSE_NOTIFY) return;
  if (self->alert_.empty()) self->alert_ = std::string("received alert: ") + SSL_alert_desc_string_long(value);
}

Result<void> TlsStream::feed_ciphertext(std::string_view bytes) {
  if (state_ == State::kFailed) return make_error(ErrorCode::kUnavailable, error_);
  std::size_t waiting = BIO_ctrl_pending(in_);
  if (waiting + bytes.size() > kOverfeedFactor * limits_.buffered)
    return make_error(ErrorCode::kLimitExceeded,
                      "TLS input over its bound: " + std::to_string(waiting) + " bytes waiting and " +
                          std::to_string(bytes.size()) + " more fed (pause reading while wants_ciphertext() is false)");
  if (!bytes.empty() && BIO_write(in_, bytes.data(), static_cast<int>(bytes.size())) != static_cast<int>(bytes.size()))
    return make_error(ErrorCode::kInternal, "cannot buffer TLS input: " + take_openssl_errors());
  pump();
  if (state_ == State::kFailed) return make_error(ErrorCode::kUnavailable, error_);
  return {};
}

std::string TlsStream::take_ciphertext() {
  std::string bytes(BIO_ctrl_pending(out_), '\0');
  if (bytes.empty()) return bytes;
  int got = BIO_read(out_, bytes.data(), static_cast<int>(bytes.size()));
  bytes.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return bytes;
}

std::size_t TlsStream::ciphertext_pending() const { return BIO_ctrl_pending(out_); }

Result<void> TlsStream::write_plaintext(std::string_view bytes) {
  if (state_ == State::kFailed) return make_error(ErrorCode::kUnavailable, error_);
  if (state_ == State::kClosed) return make_error(ErrorCode::kWrongState, "cannot write to a TLS connection after closing it");
  std::size_t waiting = pending_out_.size() + BIO_ctrl_pending(out_);
  if (waiting + bytes.size() > kOverfeedFactor * limits_.buffered)
    return make_error(ErrorCode::kLimitExceeded,
                      "TLS output over its bound: " + std::to_string(waiting) + " bytes not yet taken and " +
                          std::to_string(bytes.size()) + " more written (send what take_ciphertext() returns first)");
  pending_out_.append(bytes);
  pump();
  if (state_ == State::kFailed) return make_error(ErrorCode::kUnavailable, error_);
  return {};
}

std::string TlsStream::read_plaintext(std::size_t max) {
  std::size_t take = std::min(max, plaintext_in_.size());
  std::string out = plaintext_in_.substr(0, take);
  plaintext_in_.erase(0, take);
  pump();  // room again: decrypt what is waiting
  return out;
}

bool TlsStream::wants_ciphertext() const {
  return state_ != State::kFailed && !peer_closed_ && BIO_ctrl_pending(in_) < limits_.buffered &&
         plaintext_in_.size() < limits_.buffered;
}

void TlsStream::close() {
  if (state_ == State::kFailed || state_ == State::kClosed) return;
  if (state_ == State::kOpen) {
    pump();  // what was written goes out before close_notify
    ERR_clear_error();
    SSL_shutdown(ssl_.get());
  }
  pending_out_.clear();
  state_ = State::kClosed;
}

std::string TlsStream::alpn() const {
  const unsigned char* data = nullptr;
  unsigned int size = 0;
  SSL_get0_alpn_selected(ssl_.get(), &data, &size);
  return std::string(reinterpret_cast<const char*>(data), data ? size : 0);
}

std::string TlsStream::protocol_version() const { return handshake_done() ? SSL_get_version(ssl_.get()) : ""; }

void TlsStream::pump() {
  if (state_ == State::kFailed) return;
  if (state_ == State::kHandshaking) {
    ERR_clear_error();
    int rc = SSL_do_handshake(ssl_.get());
    if (rc != 1) {
      int ssl_error = SSL_get_error(ssl_.get(), rc);
      if (!is_retry(ssl_error)) fail(ssl_error);
      return;
    }
    state_ = State::kOpen;
    handshaken_ = true;
  }
  if (!handshaken_) return;  // closed before the handshake finished: nothing to read or write
  while (state_ == State::kOpen && !pending_out_.empty()) {
    ERR_clear_error();
    std::size_t written = 0;
    if (SSL_write_ex(ssl_.get(), pending_out_.data(), pending_out_.size(), &written) != 1) {
      int ssl_error = SSL_get_error(ssl_.get(), 0);
      if (is_retry(ssl_error)) break;
      return fail(ssl_error);
    }
    pending_out_.erase(0, written);
  }
  char chunk[kReadChunk];
  while (!peer_closed_ && plaintext_in_.size() < limits_.buffered) {
    ERR_clear_error();
    std::size_t got = 0;
    std::size_t room = std::min(sizeof chunk, limits_.buffered - plaintext_in_.size());
    if (SSL_read_ex(ssl_.get(), chunk, room, &got) == 1) {
      plaintext_in_.append(chunk, got);
      continue;
    }
    int ssl_error = SSL_get_error(ssl_.get(), 0);
    if (is_retry(ssl_error)) break;
    if (ssl_error == SSL_ERROR_ZERO_RETURN) {
      peer_closed_ = true;
      break;
    }
    return fail(ssl_error);
  }
}

void TlsStream::fail(int ssl_error) {
  state_ = State::kFailed;
  error_ = describe_failure(ssl_error);
  pending_out_.clear();
}

std::string TlsStream::describe_failure(int ssl_error) {
  std::string who = role_ == Role::kClient ? "upstream " + name_
                                            : (name_.empty() ? std::string("the guest's client") : "the guest's client for " + name_);
  std::string what = std::string(handshaken_ ? "TLS connection with " : "TLS handshake with ") + who + " failed: ";
  if (!name_error_.empty()) return what + name_error_;
  long verify = role_ == Role::kClient ? SSL_get_verify_result(ssl_.get()) : X509_V_OK;
  if (verify != X509_V_OK) {
    std::string reason = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
      reason += " (the certificate is not for " + name_ + ")";
    ERR_clear_error();
    return what + reason;
  }
  if (!alert_.empty()) {
    ERR_clear_error();
    return what + alert_;
  }
  if (ssl_error == SSL_ERROR_SYSCALL) return what + take_openssl_errors("unexpected end of the TLS stream");
  return what + take_openssl_errors();
}

}  // namespace lockroom::egress::tls
