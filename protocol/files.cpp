// file/read and file/write params and results; see files.h.
#include "protocol/files.h"

#include "protocol/channel/base64.h"
#include "protocol/sandbox.h"
#include "protocol/workspace.h"

namespace lockroom::protocol {

namespace {

// A guest path: absolute, without NUL, bounded like the channel's paths.
std::string read_guest_path(ParamReader& reader) {
  std::string path = reader.string("path", true).value_or("");
  if (!reader.ok()) return path;
  if (path.empty() || path[0] != '/')
    reader.fail("path", "must be an absolute path in the guest (e.g. \"/workspace/src/main.c\"), got \"" + path + "\"");
  else if (path.find('\0') != std::string::npos)
    reader.fail("path", "contains a NUL byte");
  else if (path.size() > 4096)
    reader.fail("path", "is " + std::to_string(path.size()) + " bytes long; at most 4096 are accepted");
  return path;
}

}  // namespace

FileReadParams read_file_read(ParamReader& reader) {
  FileReadParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.path = read_guest_path(reader);
  out.offset = reader.integer("offset", false, 0).value_or(0);
  out.length = reader.integer("length", false, 1, kMaxFileChunk).value_or(kMaxFileChunk);
  reader.reject_unknown();
  return out;
}

FileWriteParams read_file_write(ParamReader& reader) {
  FileWriteParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.path = read_guest_path(reader);
  std::string data = reader.string("data", true).value_or("");
  std::string encoding = reader.string("encoding", false).value_or("utf-8");
  out.mode = reader.integer("mode", false, 0, 07777);
  out.append = reader.boolean("append", false).value_or(false);
  out.mkdirs = reader.boolean("mkdirs", false).value_or(false);
  if (!reader.ok()) return out;
  if (encoding == "base64") {
    auto decoded = base64_decode(data);
    if (!decoded) {
      reader.fail("data", "is not valid base64");
      return out;
    }
    out.data = std::move(*decoded);
  } else if (encoding == "utf-8") {
    out.data = std::move(data);
  } else {
    reader.fail("encoding", "must be \"utf-8\" or \"base64\", got \"" + encoding + "\"");
    return out;
  }
  if (static_cast<std::int64_t>(out.data.size()) > kMaxFileChunk)
    reader.fail("data", "holds " + std::to_string(out.data.size()) + " bytes; at most " + std::to_string(kMaxFileChunk) +
                            " are written per request: write the rest with \"append\": true");
  reader.reject_unknown();
  return out;
}

json file_read_json(const std::string& bytes, std::int64_t size, bool eof) {
  json out = json::object();
  put_text_or_base64(out, "data", bytes);
  if (out.contains("dataEncoding")) {
    out.erase("dataEncoding");
    out["encoding"] = "base64";
  }
  out["size"] = size;
  out["eof"] = eof;
  return out;
}

}  // namespace lockroom::protocol
