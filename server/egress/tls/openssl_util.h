// Small pieces shared by the egress TLS files: owning pointers for OpenSSL objects, the text of
// OpenSSL's error queue, and IP-literal parsing for certificate names.
//
// Pure helpers with no I/O; any thread (OpenSSL's error queue is per thread).
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockroom::egress::tls {

template <auto Free>
struct OpenSslDeleter {
  template <typename T>
  void operator()(T* p) const { Free(p); }
};

using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY_free>>;
using EvpPkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, OpenSslDeleter<EVP_PKEY_CTX_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, OpenSslDeleter<X509_STORE_free>>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpenSslDeleter<X509_STORE_CTX_free>>;
using X509ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free_all>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslDeleter<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, OpenSslDeleter<SSL_free>>;

// Adds a reference and wraps it: for objects OpenSSL hands out without giving ownership.
inline X509Ptr share(X509* cert) {
  X509_up_ref(cert);
  return X509Ptr(cert);
}
inline EvpPkeyPtr share(EVP_PKEY* key) {
  EVP_PKEY_up_ref(key);
  return EvpPkeyPtr(key);
}

// Drains this thread's OpenSSL error queue into one line ("reason; reason"), or `fallback` when
// the queue is empty.
std::string take_openssl_errors(std::string_view fallback = "no detail from OpenSSL");

// The 4 or 16 address bytes of an IPv4/IPv6 literal ("192.0.2.1", "2001:db8::1"), or nothing.
std::optional<std::vector<unsigned char>> parse_ip_literal(std::string_view text);

// An EC P-256 key pair, made in memory.
EvpPkeyPtr generate_p256_key();

// The PEM text of a certificate.
std::string certificate_pem(X509* cert);

}  // namespace lockroom::egress::tls
