// LeafCerts; see leaf_certs.h.
#include "server/egress/tls/leaf_certs.h"

#include <arpa/inet.h>

#include <algorithm>

#include "server/egress/tls/x509_builder.h"

namespace lockroom::egress::tls {

namespace {

constexpr std::size_t kMaxNameLength = 253;
constexpr std::size_t kMaxLabelLength = 63;
constexpr std::size_t kMaxCommonNameLength = 64;

bool valid_label(std::string_view label) {
  if (label.empty() || label.size() > kMaxLabelLength) return false;
  if (label.front() == '-' || label.back() == '-') return false;
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > 80) out += "...";
  return out;
}

}  // namespace

Result<std::string> normalise_cert_name(std::string_view name) {
  if (auto ip = parse_ip_literal(name)) {
    char text[INET6_ADDRSTRLEN];
    inet_ntop(ip->size() == 4 ? AF_INET : AF_INET6, ip->data(), text, sizeof text);
    return std::string(text);
  }
  std::string lower(name);
  if (!lower.empty() && lower.back() == '.') lower.pop_back();
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; });
  bool ok = !lower.empty() && lower.size() <= kMaxNameLength;
  for (std::size_t start = 0; ok;) {
    std::size_t dot = lower.find('.', start);
    ok = valid_label(std::string_view(lower).substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!ok)
    return make_error(ErrorCode::kInvalidInput,
                      "'" + printable(name) + "' is not a host name or IP address a certificate can be made for");
  return lower;
}

Result<LeafCert> mint_leaf(X509* ca_cert, EVP_PKEY* ca_key, EVP_PKEY* leaf_key, const std::vector<std::string>& names,
                           std::time_t not_before, std::time_t not_after) {
  if (names.empty()) return make_error(ErrorCode::kInvalidInput, "a leaf certificate needs at least one name");
  const std::string& name = names.front();
  std::string common_name = name.size() <= kMaxCommonNameLength ? name : std::string();
  auto cert = start_certificate(common_name, leaf_key, not_before, not_after);
  if (!cert) return cert.error();
  X509* c = cert->get();
  for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:FALSE"},
                            std::pair{NID_key_usage, "critical,digitalSignature"},
                            std::pair{NID_ext_key_usage, "serverAuth"},
                            std::pair{NID_subject_key_identifier, "hash"},
                            std::pair{NID_authority_key_identifier, "keyid:always"}}) {
    if (auto added = add_extension(c, ca_cert, nid, value); !added) return added.error();
  }
  if (auto san = add_subject_alt_names(c, names); !san) return san.error();
  if (auto signed_ok = sign_certificate(c, ca_cert, ca_key); !signed_ok) return signed_ok.error();
  return LeafCert{name, std::move(*cert), share(leaf_key)};
}

Result<std::unique_ptr<LeafCerts>> LeafCerts::create(const SandboxCa& ca, std::size_t capacity) {
  if (capacity == 0) return make_error(ErrorCode::kInvalidInput, "the leaf certificate cache needs a capacity of 1 or more");
  EvpPkeyPtr key = generate_p256_key();
  if (!key) return make_error(ErrorCode::kInternal, "cannot generate the leaf certificate key: " + take_openssl_errors());
  return std::unique_ptr<LeafCerts>(new LeafCerts(ca, std::move(key), capacity));
}

LeafCerts::LeafCerts(const SandboxCa& ca, EvpPkeyPtr leaf_key, std::size_t capacity)
    : ca_cert_(share(ca.certificate())), ca_key_(share(ca.key())), leaf_key_(std::move(leaf_key)), capacity_(capacity) {}

Result<std::shared_ptr<const LeafCert>> LeafCerts::get(std::string_view name) {
  auto normal = normalise_cert_name(name);
  if (!normal) return normal.error();
  if (auto found = by_name_.find(*normal); found != by_name_.end()) {
    recent_.splice(recent_.begin(), recent_, found->second);
    return *found->second;
  }
  auto leaf = mint_leaf(ca_cert_.get(), ca_key_.get(), leaf_key_.get(), {*normal}, not_before_of(ca_cert_.get()),
                        not_after_of(ca_cert_.get()));
  if (!leaf) return leaf.error();
  ++mints_;
  auto entry = std::make_shared<const LeafCert>(std::move(*leaf));
  recent_.push_front(entry);
  by_name_[*normal] = recent_.begin();
  if (recent_.size() > capacity_) {
    by_name_.erase(recent_.back()->name);
    recent_.pop_back();
  }
  return entry;
}

}  // namespace lockroom::egress::tls
