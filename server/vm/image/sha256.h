// SHA-256 for content-addressing guest images (OpenSSL's EVP underneath).
//
// Sha256 hashes a stream of labelled parts: each add() is framed by its label and length, so
// ("ab","c") and ("a","bc") never collide. Used by the image builder on the CLI thread.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "server/common/result.h"

namespace lockroom::vm::image {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Adds `label`, the length of `data`, then `data`.
  void add(std::string_view label, std::string_view data);
  // The same for the bytes of a file; fails when it cannot be read.
  Result<void> add_file(std::string_view label, const std::filesystem::path& path);
  // Unframed bytes.
  void add_raw(std::string_view bytes);
  // Lower-case hex; the hasher is spent afterwards.
  std::string hex_digest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The hex SHA-256 of `data`, unframed.
std::string sha256_hex(std::string_view data);

}  // namespace lockroom::vm::image
