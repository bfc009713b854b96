// LeafCerts: per-host server certificates signed by a sandbox's CA, cached.
//
// The TLS server role (tls_stream.h) asks for the certificate of the name the guest's client
// sent in SNI (or of the CONNECT target when it sent none). A leaf names exactly that host
// (subjectAltName dNSName, or iPAddress for an IP literal), is for serverAuth only, carries the
// CA's key identifier, and is valid within the CA's window. All leaves of one LeafCerts share one
// P-256 key made in memory with it, so a mint is one signature. Names come from the guest and are
// validated (DNS syntax, at most 253 characters) before anything is signed. The cache holds up to
// `capacity` names and forgets the least recently used. Pure, no I/O; one thread at a time.
#pragma once

#include <cstddef>
#include <ctime>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/common/result.h"
#include "server/egress/tls/openssl_util.h"
#include "server/egress/tls/sandbox_ca.h"

namespace lockroom::egress::tls {

// A certificate and its private key, ready for SSL_use_cert_and_key.
struct LeafCert {
  std::string name;  // normalised: lower case, no trailing dot
  X509Ptr cert;
  EvpPkeyPtr key;
};

// The canonical form of a host name or IP literal for a certificate, or an error naming it.
Result<std::string> normalise_cert_name(std::string_view name);

// Mints one leaf for `names` (already normalised; the first is its CN and LeafCert::name) with its
// own validity window; LeafCerts uses one name and the CA's window. Tests use this for servers
// with several names and for expired certificates.
Result<LeafCert> mint_leaf(X509* ca_cert, EVP_PKEY* ca_key, EVP_PKEY* leaf_key, const std::vector<std::string>& names,
                           std::time_t not_before, std::time_t not_after);

class LeafCerts {
 public:
  static constexpr std::size_t kDefaultCapacity = 256;

  // Keeps its own references to the CA's certificate and key; `ca` may go away afterwards.
  static Result<std::unique_ptr<LeafCerts>> create(const SandboxCa& ca, std::size_t capacity = kDefaultCapacity);

  // The leaf for `name` (a host name or IP literal), minted on first use.
  Result<std::shared_ptr<const LeafCert>> get(std::string_view name);

  std::size_t size() const { return by_name_.size(); }
  std::size_t mint_count() const { return mints_; }

 private:
  using Entry = std::shared_ptr<const LeafCert>;
  LeafCerts(const SandboxCa& ca, EvpPkeyPtr leaf_key, std::size_t capacity);

  X509Ptr ca_cert_;
  EvpPkeyPtr ca_key_;
  EvpPkeyPtr leaf_key_;
  std::size_t capacity_;
  std::list<Entry> recent_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_name_;
  std::size_t mints_ = 0;
};

}  // namespace lockroom::egress::tls
