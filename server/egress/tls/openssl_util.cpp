// OpenSSL helpers; see openssl_util.h.
#include "server/egress/tls/openssl_util.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>

namespace lockroom::egress::tls {

std::string take_openssl_errors(std::string_view fallback) {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    std::string part = reason ? reason : "error " + std::to_string(code);
    if (text.find(part) != std::string::npos) continue;  // the same reason repeated down the stack
    if (!text.empty()) text += "; ";
    text += part;
  }
  return text.empty() ? std::string(fallback) : text;
}

std::optional<std::vector<unsigned char>> parse_ip_literal(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  std::string copy(text);
  unsigned char bytes[16];
  if (inet_pton(AF_INET, copy.c_str(), bytes) == 1) return std::vector<unsigned char>(bytes, bytes + 4);
  if (inet_pton(AF_INET6, copy.c_str(), bytes) == 1) return std::vector<unsigned char>(bytes, bytes + 16);
  return std::nullopt;
}

EvpPkeyPtr generate_p256_key() {
  return EvpPkeyPtr(EVP_EC_gen("P-256"));
}

std::string certificate_pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace lockroom::egress::tls
