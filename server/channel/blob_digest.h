// BlobDigest: the git blob id (SHA-1 of "blob <size>\0" and the bytes) computed with OpenSSL, fed
// as the bytes arrive. The host checks what the guest sends with it: faster than libgit2's
// collision-detecting SHA-1, and the ids it checks were claimed by the guest, not trusted.
#pragma once

#include <openssl/evp.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/channel/messages.h"

namespace lockroom::channel {

class BlobDigest {
 public:
  BlobDigest() : ctx_(EVP_MD_CTX_new()) {}
  ~BlobDigest() { EVP_MD_CTX_free(ctx_); }
  BlobDigest(const BlobDigest&) = delete;
  BlobDigest& operator=(const BlobDigest&) = delete;
  void begin(std::uint64_t size) {
    EVP_DigestInit_ex(ctx_, EVP_sha1(), nullptr);
    std::string header = "blob " + std::to_string(size);
    EVP_DigestUpdate(ctx_, header.c_str(), header.size() + 1);  // with the NUL
  }
  void update(std::string_view bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }
  // The id, 40 lowercase hex digits.
  std::string hex() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_, out, &len);
    return protocol::channel::id_to_hex(std::string_view(reinterpret_cast<char*>(out), len));
  }
  // The id of bytes held whole.
  static std::string of(std::string_view content) {
    BlobDigest digest;
    digest.begin(content.size());
    digest.update(content);
    return digest.hex();
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace lockroom::channel
