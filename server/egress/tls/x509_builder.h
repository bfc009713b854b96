// The steps shared by the sandbox CA and its leaf certificates when they build an X.509 v3
// certificate: a random serial, a validity window, extensions and the signature.
//
// Pure (no I/O); any thread. Each step returns an error text from OpenSSL on failure.
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/egress/tls/openssl_util.h"

namespace lockroom::egress::tls {

// A new v3 certificate with a random 128-bit serial, the given subject CN (omitted when empty)
// and public key, valid from `not_before` to `not_after`.
Result<X509Ptr> start_certificate(std::string_view common_name, EVP_PKEY* public_key, std::time_t not_before,
                                  std::time_t not_after);

// Adds one extension written in OpenSSL's config syntax (only ever with constant values here:
// names from outside go through add_subject_alt_name). `issuer` is the signing certificate (the
// certificate itself when self-signed), needed for authorityKeyIdentifier.
Result<void> add_extension(X509* cert, X509* issuer, int nid, const char* value);

// Adds a subjectAltName holding, for each name, a dNSName or, for an IP literal, an iPAddress.
Result<void> add_subject_alt_names(X509* cert, const std::vector<std::string>& names);

// Sets the issuer name and signs with SHA-256.
Result<void> sign_certificate(X509* cert, X509* issuer, EVP_PKEY* issuer_key);

// The certificate's notBefore / notAfter as time_t.
std::time_t not_before_of(const X509* cert);
std::time_t not_after_of(const X509* cert);

}  // namespace lockroom::egress::tls
