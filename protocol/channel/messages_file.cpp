// JSON of file.read, file.write, file.stat and file.list; see messages.h.
#include "protocol/channel/base64.h"
#include "protocol/channel/message_util.h"
#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

using detail::check_text;
using detail::finish;

namespace {

constexpr std::int64_t kMaxFileSize = 1LL << 50;
constexpr std::int64_t kMaxStreamId = 0x7fffffffLL;

std::string read_path(ParamReader& r) {
  std::string path = r.string("path", true).value_or("");
  if (r.ok()) check_text(r, "path", path, kMaxPath, true);
  return path;
}

bool known_type(const std::string& type) { return type == "file" || type == "dir" || type == "symlink" || type == "other"; }

void check_type(ParamReader& r, const std::string& type) {
  if (r.ok() && !known_type(type)) r.fail("type", "must be \"file\", \"dir\", \"symlink\" or \"other\"");
}

}  // namespace

json to_json(const FileReadParams& v) {
  json j{{"path", v.path}};
  if (v.stream) {
    j["stream"] = true;
  } else {
    j["offset"] = v.offset;
    j["length"] = v.length;
  }
  return j;
}

Result<FileReadParams> parse_file_read_params(const json& j) {
  ParamReader r(j);
  FileReadParams v;
  v.path = read_path(r);
  v.offset = r.integer("offset", false, 0, kMaxFileSize).value_or(0);
  v.length = r.integer("length", false, 0, static_cast<std::int64_t>(kMaxInlineFile)).value_or(static_cast<std::int64_t>(kMaxInlineFile));
  v.stream = r.boolean("stream", false).value_or(false);
  return finish(r, std::move(v));
}

json to_json(const FileReadResult& v) {
  if (v.stream) return json{{"stream", v.stream}, {"size", v.size}};
  return json{{"data", base64_encode(v.data)}, {"size", v.size}, {"eof", v.eof}};
}

Result<FileReadResult> parse_file_read_result(const json& j, bool streamed) {
  ParamReader r(j);
  FileReadResult v;
  v.size = r.integer("size", true, 0, kMaxFileSize).value_or(0);
  if (streamed) {
    v.stream = static_cast<std::uint32_t>(r.integer("stream", true, 1, kMaxStreamId).value_or(0));
  } else {
    v.data = detail::read_base64(r, "data", true, kMaxInlineFile);
    v.eof = r.boolean("eof", true).value_or(false);
  }
  return finish(r, std::move(v));
}

json to_json(const FileWriteParams& v) {
  json j{{"path", v.path}, {"mode", v.mode}};
  if (v.stream) {
    j["stream"] = true;
  } else {
    j["data"] = base64_encode(v.data);
  }
  if (v.append) j["append"] = true;
  if (v.mkdirs) j["mkdirs"] = true;
  if (v.user) j["user"] = *v.user;
  return j;
}

Result<FileWriteParams> parse_file_write_params(const json& j) {
  ParamReader r(j);
  FileWriteParams v;
  v.path = read_path(r);
  v.stream = r.boolean("stream", false).value_or(false);
  if (!v.stream) v.data = detail::read_base64(r, "data", true, kMaxInlineFile);
  v.mode = r.integer("mode", false, 0, 07777).value_or(0644);
  v.append = r.boolean("append", false).value_or(false);
  v.mkdirs = r.boolean("mkdirs", false).value_or(false);
  v.user = detail::read_user(r);
  return finish(r, std::move(v));
}

json to_json(const FileWriteResult& v) {
  if (v.stream) return json{{"stream", v.stream}};
  return json{{"written", v.written}};
}

Result<FileWriteResult> parse_file_write_result(const json& j, bool streamed) {
  ParamReader r(j);
  FileWriteResult v;
  if (streamed) {
    v.stream = static_cast<std::uint32_t>(r.integer("stream", true, 1, kMaxStreamId).value_or(0));
  } else {
    v.written = r.integer("written", true, 0, static_cast<std::int64_t>(kMaxInlineFile)).value_or(0);
  }
  return finish(r, std::move(v));
}

json to_json(const FileStatParams& v) { return json{{"path", v.path}, {"follow", v.follow}}; }

Result<FileStatParams> parse_file_stat_params(const json& j) {
  ParamReader r(j);
  FileStatParams v;
  v.path = read_path(r);
  v.follow = r.boolean("follow", false).value_or(false);
  return finish(r, std::move(v));
}

json to_json(const FileStat& v) {
  json j{{"type", v.type}, {"size", v.size}, {"mode", v.mode}, {"mtimeNs", v.mtime_ns}};
  if (v.target) j["target"] = *v.target;
  return j;
}

Result<FileStat> parse_file_stat(const json& j) {
  ParamReader r(j);
  FileStat v;
  v.type = r.string("type", true).value_or("");
  check_type(r, v.type);
  v.size = r.integer("size", true, 0, kMaxFileSize).value_or(0);
  v.mode = r.integer("mode", true, 0, 07777).value_or(0);
  v.mtime_ns = r.integer("mtimeNs", true).value_or(0);
  v.target = r.string("target", false);
  if (v.target) check_text(r, "target", *v.target, kMaxPath, false);
  return finish(r, std::move(v));
}

json to_json(const FileListParams& v) { return json{{"path", v.path}, {"limit", v.limit}}; }

Result<FileListParams> parse_file_list_params(const json& j) {
  ParamReader r(j);
  FileListParams v;
  v.path = read_path(r);
  v.limit = r.integer("limit", false, 1, kMaxListLimit).value_or(kDefaultListLimit);
  return finish(r, std::move(v));
}

json to_json(const FileListResult& v) {
  json entries = json::array();
  for (const auto& e : v.entries) entries.push_back(json{{"name", e.name}, {"type", e.type}, {"size", e.size}, {"mode", e.mode}});
  return json{{"entries", std::move(entries)}, {"truncated", v.truncated}};
}

Result<FileListResult> parse_file_list_result(const json& j) {
  ParamReader r(j);
  FileListResult v;
  v.truncated = r.boolean("truncated", true).value_or(false);
  auto entries = r.any("entries", true);
  if (entries && !entries->is_array()) r.fail("entries", "must be an array");
  if (entries && entries->is_array()) {
    if (entries->size() > static_cast<std::size_t>(kMaxListLimit))
      r.fail("entries", "has " + std::to_string(entries->size()) + " items; the limit is " + std::to_string(kMaxListLimit));
    for (std::size_t i = 0; r.ok() && i < entries->size(); ++i) {
      ParamReader e((*entries)[i], "entries[" + std::to_string(i) + "].");
      DirEntry entry;
      entry.name = e.string("name", true).value_or("");
      if (e.ok()) check_text(e, "name", entry.name, 255, true);
      if (e.ok() && (entry.name == "." || entry.name == ".." || entry.name.find('/') != std::string::npos))
        e.fail("name", "must be a single path component, got \"" + entry.name + "\"");
      entry.type = e.string("type", true).value_or("");
      check_type(e, entry.type);
      entry.size = e.integer("size", true, 0, kMaxFileSize).value_or(0);
      entry.mode = e.integer("mode", true, 0, 07777).value_or(0);
      r.merge(e);
      v.entries.push_back(std::move(entry));
    }
  }
  return finish(r, std::move(v));
}

}  // namespace lockroom::protocol::channel
