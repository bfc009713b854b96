// Sha256; see sha256.h.
#include "server/vm/image/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace lockroom::vm::image {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::add_raw(std::string_view bytes) { EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size()); }

void Sha256::add(std::string_view label, std::string_view data) {
  add_raw(label);
  add_raw(std::string_view("\0", 1));
  std::string len = std::to_string(data.size());
  add_raw(len);
  add_raw(std::string_view("\0", 1));
  add_raw(data);
}

Result<void> Sha256::add_file(std::string_view label, const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot read " + path.string() + ": " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kUnavailable, "cannot read " + path.string() + ": " + std::strerror(errno));
  add_raw(label);
  add_raw(std::string_view("\0", 1));
  add_raw(std::to_string(size));
  add_raw(std::string_view("\0", 1));
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    add_raw(std::string_view(buf, static_cast<std::size_t>(in.gcount())));
  }
  return {};
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.add_raw(data);
  return h.hex_digest();
}

}  // namespace lockroom::vm::image
