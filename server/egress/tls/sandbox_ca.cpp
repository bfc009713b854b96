// SandboxCa; see sandbox_ca.h.
#include "server/egress/tls/sandbox_ca.h"

#include "server/egress/tls/x509_builder.h"

namespace lockroom::egress::tls {

namespace {

constexpr std::size_t kMaxSandboxIdLength = 40;  // "lockroom sandbox <id> CA" stays within CN's 64

bool valid_sandbox_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxSandboxIdLength) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<SandboxCa> SandboxCa::create(std::string_view sandbox_id, CaValidity validity) {
  if (!valid_sandbox_id(sandbox_id))
    return make_error(ErrorCode::kInvalidInput, "sandbox id '" + std::string(sandbox_id.substr(0, 64)) +
                                                    "' cannot name a CA: use 1-40 characters of A-Z a-z 0-9 . _ -");
  if (validity.lifetime.count() <= 0 || validity.backdate.count() < 0)
    return make_error(ErrorCode::kInvalidInput, "CA validity must have a positive lifetime and a backdate of 0 or more");

  EvpPkeyPtr key = generate_p256_key();
  if (!key) return make_error(ErrorCode::kInternal, "cannot generate the sandbox CA key: " + take_openssl_errors());

  std::time_t now = std::time(nullptr);
  auto cert = start_certificate("lockroom sandbox " + std::string(sandbox_id) + " CA", key.get(),
                                now - validity.backdate.count(), now + validity.lifetime.count());
  if (!cert) return cert.error();
  X509* c = cert->get();
  for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                            std::pair{NID_key_usage, "critical,keyCertSign,cRLSign"},
                            std::pair{NID_subject_key_identifier, "hash"}}) {
    if (auto added = add_extension(c, c, nid, value); !added) return added.error();
  }
  if (auto signed_ok = sign_certificate(c, c, key.get()); !signed_ok) return signed_ok.error();
  return SandboxCa(std::move(key), std::move(*cert));
}

std::time_t SandboxCa::not_before() const { return not_before_of(cert_.get()); }
std::time_t SandboxCa::not_after() const { return not_after_of(cert_.get()); }

}  // namespace lockroom::egress::tls
