// SandboxCa: the certificate authority of one sandbox, for terminating the guest's TLS.
//
// Made when a sandbox that needs TLS inspection starts: an EC P-256 key that exists only in this
// process's memory (never written to disk, never sent to the guest) and a self-signed CA
// certificate "CN=lockroom sandbox <id> CA" (CA:TRUE, pathlen:0, keyCertSign|cRLSign), valid
// from an hour ago for a week. Only the certificate leaves, as PEM, for the guest's trust store.
// LeafCerts (leaf_certs.h) signs per-host certificates with it. Pure, no I/O; any one thread.
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/egress/tls/openssl_util.h"

namespace lockroom::egress::tls {

struct CaValidity {
  std::chrono::seconds backdate{std::chrono::hours(1)};   // tolerates a guest clock a little behind
  std::chrono::seconds lifetime{std::chrono::hours(24 * 7)};  // from now
};

class SandboxCa {
 public:
  // `sandbox_id`: 1-40 characters of [A-Za-z0-9._-] (it goes into the certificate's name).
  static Result<SandboxCa> create(std::string_view sandbox_id, CaValidity validity = {});

  X509* certificate() const { return cert_.get(); }
  EVP_PKEY* key() const { return key_.get(); }  // for signing leaves; never export it
  std::string certificate_pem() const { return tls::certificate_pem(cert_.get()); }
  std::time_t not_before() const;
  std::time_t not_after() const;

 private:
  SandboxCa(EvpPkeyPtr key, X509Ptr cert) : key_(std::move(key)), cert_(std::move(cert)) {}
  EvpPkeyPtr key_;
  X509Ptr cert_;
};

}  // namespace lockroom::egress::tls
