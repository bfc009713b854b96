// SandboxCa: the certificate's properties, read back with OpenSSL's own accessors.
#include <openssl/pem.h>

#include <catch2/catch.hpp>

#include "server/egress/tls/sandbox_ca.h"

using namespace lockroom::egress::tls;

namespace {

std::string subject_cn(X509* cert) {
  char text[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, text, sizeof text);
  return text;
}

}  // namespace

TEST_CASE("sandbox CA certificate is a pathlen-0 CA for signing certificates only", "[sandbox_ca]") {
  std::time_t before = std::time(nullptr);
  auto ca = SandboxCa::create("sb-42");
  REQUIRE(ca.ok());
  X509* cert = ca->certificate();

  CHECK(subject_cn(cert) == "lockroom sandbox sb-42 CA");
  CHECK(X509_NAME_cmp(X509_get_subject_name(cert), X509_get_issuer_name(cert)) == 0);
  CHECK(X509_check_ca(cert) == 1);
  CHECK(X509_get_pathlen(cert) == 0);
  int critical = -1;
  auto* constraints = static_cast<BASIC_CONSTRAINTS*>(X509_get_ext_d2i(cert, NID_basic_constraints, &critical, nullptr));
  REQUIRE(constraints);
  CHECK(constraints->ca);
  CHECK(critical == 1);
  BASIC_CONSTRAINTS_free(constraints);

  CHECK((X509_get_extension_flags(cert) & EXFLAG_KUSAGE) != 0);
  CHECK(X509_get_key_usage(cert) == (KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  CHECK(X509_get0_subject_key_id(cert) != nullptr);

  // Signed by its own key, which is an EC P-256 key.
  CHECK(X509_verify(cert, ca->key()) == 1);
  CHECK(EVP_PKEY_get_base_id(ca->key()) == EVP_PKEY_EC);
  CHECK(EVP_PKEY_get_bits(ca->key()) == 256);

  // Valid from about an hour ago for about a week.
  std::time_t after = std::time(nullptr);
  CHECK(ca->not_before() >= before - 3600);
  CHECK(ca->not_before() <= after - 3600);
  CHECK(ca->not_after() >= before + 7 * 24 * 3600);
  CHECK(ca->not_after() <= after + 7 * 24 * 3600);
}

TEST_CASE("sandbox CA exports its certificate as PEM, never its key", "[sandbox_ca]") {
  auto ca = SandboxCa::create("sb-1");
  REQUIRE(ca.ok());
  std::string pem = ca->certificate_pem();
  CHECK(pem.rfind("-----BEGIN CERTIFICATE-----", 0) == 0);
  CHECK(pem.find("PRIVATE KEY") == std::string::npos);

  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr parsed(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  REQUIRE(parsed);
  CHECK(X509_cmp(parsed.get(), ca->certificate()) == 0);
}

TEST_CASE("each sandbox CA has its own key and serial", "[sandbox_ca]") {
  auto a = SandboxCa::create("same");
  auto b = SandboxCa::create("same");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(EVP_PKEY_eq(a->key(), b->key()) != 1);
  CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(a->certificate()), X509_get0_serialNumber(b->certificate())) != 0);
  CHECK(X509_verify(a->certificate(), b->key()) != 1);
}

TEST_CASE("sandbox CA refuses ids that cannot go into a certificate name", "[sandbox_ca]") {
  for (std::string bad : {std::string(), std::string(41, 'a'), std::string("a b"), std::string("x,CN=evil"),
                          std::string("id\n")}) {
    auto ca = SandboxCa::create(bad);
    REQUIRE_FALSE(ca.ok());
    CHECK(ca.error().code == lockroom::ErrorCode::kInvalidInput);
    CHECK(ca.error().message.find("sandbox id") != std::string::npos);
  }
  CHECK(SandboxCa::create(std::string(40, 'a')).ok());
}

TEST_CASE("sandbox CA validity can be shortened", "[sandbox_ca]") {
  auto ca = SandboxCa::create("short", CaValidity{std::chrono::seconds(0), std::chrono::seconds(60)});
  REQUIRE(ca.ok());
  CHECK(ca->not_after() - ca->not_before() == 60);
  CHECK_FALSE(SandboxCa::create("bad", CaValidity{std::chrono::seconds(0), std::chrono::seconds(0)}).ok());
}
