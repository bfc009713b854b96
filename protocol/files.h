// Wire types of file/read and file/write on the editor face (protocol/files.md): files inside a
// sandbox's guest, read and written by the guest's agent, never on the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/jsonrpc.h"
#include "protocol/params.h"

namespace lockroom::protocol {

// One request moves at most this much (the guest channel's inline limit); larger files are read
// with `offset` and written with `append`.
inline constexpr std::int64_t kMaxFileChunk = 256 * 1024;

struct FileReadParams {
  std::string sandbox_id;
  std::string path;  // absolute, in the guest
  std::int64_t offset = 0;
  std::int64_t length = kMaxFileChunk;
};
FileReadParams read_file_read(ParamReader& reader);

struct FileWriteParams {
  std::string sandbox_id;
  std::string path;  // absolute, in the guest
  std::string data;  // decoded bytes
  std::optional<std::int64_t> mode;
  bool append = false;
  bool mkdirs = false;
};
FileWriteParams read_file_write(ParamReader& reader);

// {data, encoding?, size, eof}: `data` is the bytes as text when they are valid UTF-8, else
// base64 with `encoding: "base64"`.
json file_read_json(const std::string& bytes, std::int64_t size, bool eof);

}  // namespace lockroom::protocol
