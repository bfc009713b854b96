// LeafCerts: leaves verify against the sandbox CA alone, for the right names only; names from
// the guest are validated; the cache is bounded.
#include <catch2/catch.hpp>

#include "server/egress/tls/leaf_certs.h"

using namespace lockroom::egress::tls;

namespace {

// Verifies `leaf` with a store that holds only `ca`, for host name (or IP literal) `name`.
// Returns the X509_V_ERR code (X509_V_OK on success).
int verify_for(X509* ca, X509* leaf, const std::string& name) {
  X509StorePtr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), ca);
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (parse_ip_literal(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  }
  X509_verify_cert(ctx.get());
  return X509_STORE_CTX_get_error(ctx.get());
}

}  // namespace

TEST_CASE("leaf for a host name verifies against the CA for that name only", "[leaf_certs]") {
  auto ca = SandboxCa::create("sb");
  REQUIRE(ca.ok());
  auto leaves = LeafCerts::create(*ca);
  REQUIRE(leaves.ok());
  auto leaf = (*leaves)->get("api.example.test");
  REQUIRE(leaf.ok());
  X509* cert = (*leaf)->cert.get();

  CHECK(verify_for(ca->certificate(), cert, "api.example.test") == X509_V_OK);
  CHECK(verify_for(ca->certificate(), cert, "API.Example.Test") == X509_V_OK);
  CHECK(verify_for(ca->certificate(), cert, "other.example.test") == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(verify_for(ca->certificate(), cert, "example.test") == X509_V_ERR_HOSTNAME_MISMATCH);

  // Another sandbox's CA does not vouch for it.
  auto other = SandboxCa::create("other");
  REQUIRE(other.ok());
  CHECK(verify_for(other->certificate(), cert, "api.example.test") != X509_V_OK);

  // serverAuth only, not a CA, names its issuer's key, within the CA's validity.
  CHECK(X509_check_ca(cert) == 0);
  CHECK((X509_get_extended_key_usage(cert) & XKU_SSL_SERVER) != 0);
  CHECK((X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT) == 0);
  REQUIRE(X509_get0_authority_key_id(cert) != nullptr);
  CHECK(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(cert), X509_get0_subject_key_id(ca->certificate())) == 0);
  CHECK(X509_cmp_time(X509_get0_notBefore(cert), nullptr) < 0);
  CHECK(ASN1_TIME_compare(X509_get0_notBefore(cert), X509_get0_notBefore(ca->certificate())) >= 0);
  CHECK(ASN1_TIME_compare(X509_get0_notAfter(cert), X509_get0_notAfter(ca->certificate())) <= 0);
  CHECK(X509_check_private_key(cert, (*leaf)->key.get()) == 1);
}

TEST_CASE("leaf for an IP address carries an iPAddress name", "[leaf_certs]") {
  auto ca = SandboxCa::create("sb");
  REQUIRE(ca.ok());
  auto leaves = LeafCerts::create(*ca);
  REQUIRE(leaves.ok());

  auto v4 = (*leaves)->get("192.0.2.7");
  REQUIRE(v4.ok());
  CHECK(verify_for(ca->certificate(), (*v4)->cert.get(), "192.0.2.7") == X509_V_OK);
  CHECK(verify_for(ca->certificate(), (*v4)->cert.get(), "192.0.2.8") == X509_V_ERR_IP_ADDRESS_MISMATCH);
  // The SAN holds no dNSName (the CN is for people reading the certificate).
  CHECK(X509_check_host((*v4)->cert.get(), "192.0.2.7", 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, nullptr) == 0);

  auto v6 = (*leaves)->get("2001:DB8:0::1");
  REQUIRE(v6.ok());
  CHECK((*v6)->name == "2001:db8::1");
  CHECK(verify_for(ca->certificate(), (*v6)->cert.get(), "2001:db8::1") == X509_V_OK);
  CHECK(verify_for(ca->certificate(), (*v6)->cert.get(), "2001:db8::2") == X509_V_ERR_IP_ADDRESS_MISMATCH);
}

TEST_CASE("leaf names from the guest are validated before anything is signed", "[leaf_certs]") {
  auto ca = SandboxCa::create("sb");
  REQUIRE(ca.ok());
  auto leaves = LeafCerts::create(*ca);
  REQUIRE(leaves.ok());
  std::string long_label(64, 'a');
  std::string too_long;
  while (too_long.size() < 254) too_long += "abcdefghi.";
  for (std::string bad : {std::string(), std::string("."), std::string("a..b"), std::string("-a.test"),
                          std::string("*.example.test"), std::string("a b.test"), std::string("evil.test,DNS:x"),
                          std::string("bad\0name", 8), long_label + ".test", too_long}) {
    auto leaf = (*leaves)->get(bad);
    REQUIRE_FALSE(leaf.ok());
    CHECK(leaf.error().code == lockroom::ErrorCode::kInvalidInput);
    CHECK(leaf.error().message.find("is not a host name or IP address") != std::string::npos);
  }
  CHECK((*leaves)->mint_count() == 0);

  auto trailing_dot = (*leaves)->get("Example.TEST.");
  REQUIRE(trailing_dot.ok());
  CHECK((*trailing_dot)->name == "example.test");
  CHECK((*leaves)->get(std::string(63, 'b') + ".test").ok());
}

TEST_CASE("a name longer than a common name still gets a certificate by its SAN", "[leaf_certs]") {
  auto ca = SandboxCa::create("sb");
  REQUIRE(ca.ok());
  auto leaves = LeafCerts::create(*ca);
  REQUIRE(leaves.ok());
  std::string name = std::string(60, 'x') + "." + std::string(60, 'y') + ".example.test";
  auto leaf = (*leaves)->get(name);
  REQUIRE(leaf.ok());
  CHECK(verify_for(ca->certificate(), (*leaf)->cert.get(), name) == X509_V_OK);
}

TEST_CASE("leaf cache returns the same certificate and forgets the least recently used", "[leaf_certs]") {
  auto ca = SandboxCa::create("sb");
  REQUIRE(ca.ok());
  auto leaves = LeafCerts::create(*ca, 2);
  REQUIRE(leaves.ok());
  LeafCerts& cache = **leaves;

  auto a1 = cache.get("a.test");
  auto a2 = cache.get("A.test");
  REQUIRE(a1.ok());
  REQUIRE(a2.ok());
  CHECK(a1->get() == a2->get());
  CHECK(cache.mint_count() == 1);

  REQUIRE(cache.get("b.test").ok());
  REQUIRE(cache.get("a.test").ok());  // a is now the most recent
  REQUIRE(cache.get("c.test").ok());  // evicts b
  CHECK(cache.size() == 2);
  CHECK(cache.mint_count() == 3);
  REQUIRE(cache.get("a.test").ok());
  CHECK(cache.mint_count() == 3);
  REQUIRE(cache.get("b.test").ok());
  CHECK(cache.mint_count() == 4);

  // An evicted leaf someone still holds stays valid.
  CHECK(X509_check_host((*a1)->cert.get(), "a.test", 0, 0, nullptr) == 1);
  CHECK_FALSE(LeafCerts::create(*ca, 0).ok());
}
