// X.509 building steps; see x509_builder.h.
#include "server/egress/tls/x509_builder.h"

#include <openssl/bn.h>
#include <openssl/rand.h>

namespace lockroom::egress::tls {

namespace {

Error openssl_error(std::string_view what) {
  return make_error(ErrorCode::kInternal, std::string(what) + ": " + take_openssl_errors());
}

bool set_time(ASN1_TIME* field, std::time_t when) { return ASN1_TIME_set(field, when) != nullptr; }

std::time_t to_time_t(const ASN1_TIME* time) {
  struct tm parsed {};
  if (ASN1_TIME_to_tm(time, &parsed) != 1) return 0;
  return timegm(&parsed);
}

}  // namespace

Result<X509Ptr> start_certificate(std::string_view common_name, EVP_PKEY* public_key, std::time_t not_before,
                                  std::time_t not_after) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) return openssl_error("cannot create a certificate");

  unsigned char serial_bytes[16];
  if (RAND_bytes(serial_bytes, sizeof serial_bytes) != 1) return openssl_error("cannot draw a random serial");
  serial_bytes[0] &= 0x7f;  // positive
  serial_bytes[0] |= 0x01;  // and full length, never zero
  std::unique_ptr<BIGNUM, OpenSslDeleter<BN_free>> serial(BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr));
  if (!serial || !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())))
    return openssl_error("cannot set the serial number");

  if (!set_time(X509_getm_notBefore(cert.get()), not_before) || !set_time(X509_getm_notAfter(cert.get()), not_after))
    return openssl_error("cannot set the validity window");

  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (!common_name.empty() &&
      X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.data()),
                                 static_cast<int>(common_name.size()), -1, 0) != 1)
    return openssl_error("cannot set the subject name");
  if (X509_set_pubkey(cert.get(), public_key) != 1) return openssl_error("cannot set the public key");
  return cert;
}

Result<void> add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509ExtensionPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return openssl_error(std::string("cannot add the ") + OBJ_nid2sn(nid) + " extension");
  return {};
}

Result<void> add_subject_alt_names(X509* cert, const std::vector<std::string>& names) {
  std::unique_ptr<GENERAL_NAMES, OpenSslDeleter<GENERAL_NAMES_free>> list(sk_GENERAL_NAME_new_null());
  if (!list) return openssl_error("cannot build the subjectAltName");
  for (const std::string& name : names) {
    GENERAL_NAME* entry = GENERAL_NAME_new();
    if (!entry || sk_GENERAL_NAME_push(list.get(), entry) <= 0) {
      GENERAL_NAME_free(entry);
      return openssl_error("cannot build the subjectAltName");
    }
    if (auto ip = parse_ip_literal(name)) {
      ASN1_OCTET_STRING* bytes = ASN1_OCTET_STRING_new();
      if (!bytes || ASN1_OCTET_STRING_set(bytes, ip->data(), static_cast<int>(ip->size())) != 1) {
        ASN1_OCTET_STRING_free(bytes);
        return openssl_error("cannot build the iPAddress name");
      }
      GENERAL_NAME_set0_value(entry, GEN_IPADD, bytes);
    } else {
      ASN1_IA5STRING* text = ASN1_IA5STRING_new();
      if (!text || ASN1_STRING_set(text, name.data(), static_cast<int>(name.size())) != 1) {
        ASN1_IA5STRING_free(text);
        return openssl_error("cannot build the dNSName");
      }
      GENERAL_NAME_set0_value(entry, GEN_DNS, text);
    }
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, list.get(), 0, X509V3_ADD_DEFAULT) != 1)
    return openssl_error("cannot add the subjectAltName extension");
  return {};
}

Result<void> sign_certificate(X509* cert, X509* issuer, EVP_PKEY* issuer_key) {
  if (X509_set_issuer_name(cert, X509_get_subject_name(issuer)) != 1) return openssl_error("cannot set the issuer");
  if (X509_sign(cert, issuer_key, EVP_sha256()) <= 0) return openssl_error("cannot sign the certificate");
  return {};
}

std::time_t not_before_of(const X509* cert) { return to_time_t(X509_get0_notBefore(cert)); }
std::time_t not_after_of(const X509* cert) { return to_time_t(X509_get0_notAfter(cert)); }

}  // namespace lockroom::egress::tls
