// The two OpenSSL contexts the egress proxy terminates and originates TLS with.
//
// TlsServerContext: toward the guest. Presents, for each connection, a leaf for the name the
// guest's client sent in SNI (from LeafCerts, chosen in OpenSSL's certificate callback), offers
// ALPN http/1.1 only (so the proxy can read the requests), TLS 1.2 or newer, no renegotiation.
// TlsClientContext: toward upstream. Verifies the server against the host's default trust store
// plus any extra CA files (PEM), TLS 1.2 or newer, ALPN http/1.1. Host name checks and SNI are
// set per connection (tls_stream.h).
//
// Made once per sandbox (server) or once per process (client: loading the trust store takes a
// while) and shared by every TlsStream. Loop thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/egress/tls/leaf_certs.h"
#include "server/egress/tls/openssl_util.h"

namespace lockroom::egress::tls {

class TlsServerContext {
 public:
  static Result<std::shared_ptr<TlsServerContext>> create(std::shared_ptr<LeafCerts> leaves);
  SSL_CTX* get() const { return ctx_.get(); }
  LeafCerts& leaves() const { return *leaves_; }

 private:
  TlsServerContext(SslCtxPtr ctx, std::shared_ptr<LeafCerts> leaves) : ctx_(std::move(ctx)), leaves_(std::move(leaves)) {}
  SslCtxPtr ctx_;
  std::shared_ptr<LeafCerts> leaves_;
};

struct TlsClientOptions {
  bool use_default_trust_store = true;        // the host's CA bundle (OpenSSL's default paths)
  std::vector<std::string> extra_ca_files;    // PEM files of further CAs to trust (tests, corporate CAs)
};

class TlsClientContext {
 public:
  static Result<std::shared_ptr<TlsClientContext>> create(const TlsClientOptions& options = {});
  SSL_CTX* get() const { return ctx_.get(); }

 private:
  explicit TlsClientContext(SslCtxPtr ctx) : ctx_(std::move(ctx)) {}
  SslCtxPtr ctx_;
};

}  // namespace lockroom::egress::tls
