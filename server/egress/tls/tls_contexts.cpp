// TLS contexts; see tls_contexts.h. The per-connection parts (the certificate callback's
// choice of leaf, error text) live with TlsStream.
#include "server/egress/tls/tls_contexts.h"

namespace lockroom::egress::tls {

namespace {

constexpr unsigned char kHttp11Alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int select_http11(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* offered,
                  unsigned int offered_len, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_len, kHttp11Alpn, sizeof kHttp11Alpn, offered, offered_len) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;  // the client did not offer http/1.1: go on without ALPN
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

Result<SslCtxPtr> new_context(const SSL_METHOD* method, const char* role) {
  SslCtxPtr ctx(SSL_CTX_new(method));
  if (!ctx) return make_error(ErrorCode::kInternal, std::string("cannot create the TLS ") + role + " context: " + take_openssl_errors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

}  // namespace

Result<std::shared_ptr<TlsServerContext>> TlsServerContext::create(std::shared_ptr<LeafCerts> leaves) {
  if (!leaves) return make_error(ErrorCode::kInvalidInput, "a TLS server context needs the sandbox's leaf certificates");
  auto ctx = new_context(TLS_server_method(), "server");
  if (!ctx) return ctx.error();
  SSL_CTX_set_alpn_select_cb(ctx->get(), select_http11, nullptr);
  SSL_CTX_set_session_cache_mode(ctx->get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx->get(), 0);
  return std::shared_ptr<TlsServerContext>(new TlsServerContext(std::move(*ctx), std::move(leaves)));
}

Result<std::shared_ptr<TlsClientContext>> TlsClientContext::create(const TlsClientOptions& options) {
  auto ctx = new_context(TLS_client_method(), "client");
  if (!ctx) return ctx.error();
  SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_PEER, nullptr);
  if (options.use_default_trust_store && SSL_CTX_set_default_verify_paths(ctx->get()) != 1)
    return make_error(ErrorCode::kUnavailable, "cannot load the host's default CA certificates: " + take_openssl_errors());
  for (const std::string& file : options.extra_ca_files) {
    if (SSL_CTX_load_verify_locations(ctx->get(), file.c_str(), nullptr) != 1)
      return make_error(ErrorCode::kInvalidInput,
                        "cannot load CA certificates from '" + file + "': " + take_openssl_errors() +
                            " (give a readable PEM file of CA certificates)");
  }
  if (SSL_CTX_set_alpn_protos(ctx->get(), kHttp11Alpn, sizeof kHttp11Alpn) != 0)
    return make_error(ErrorCode::kInternal, "cannot set ALPN on the TLS client context: " + take_openssl_errors());
  return std::shared_ptr<TlsClientContext>(new TlsClientContext(std::move(*ctx)));
}

}  // namespace lockroom::egress::tls
