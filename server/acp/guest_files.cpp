// GuestFiles; see guest_files.h.
#include "server/acp/guest_files.h"

#include "protocol/channel/base64.h"
#include "protocol/files.h"
#include "protocol/params.h"
#include "server/acp/acp_errors.h"

namespace lockroom::acp {

struct GuestFiles::Read {
  std::string path;
  std::optional<std::int64_t> line, limit;
  std::string bytes;
  rpc::Reply reply;
};

struct GuestFiles::Write {
  std::string path;
  std::string content;
  std::size_t done = 0;
  rpc::Reply reply;
};

std::string select_lines(const std::string& text, std::optional<std::int64_t> line, std::optional<std::int64_t> limit) {
  if (!line && !limit) return text;
  std::int64_t first = line.value_or(1);
  std::size_t begin = 0;
  for (std::int64_t n = 1; n < first && begin < text.size(); ++n) {
    std::size_t nl = text.find('\n', begin);
    begin = nl == std::string::npos ? text.size() : nl + 1;
  }
  if (!limit) return text.substr(begin);
  std::size_t end = begin;
  for (std::int64_t n = 0; n < *limit && end < text.size(); ++n) {
    std::size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
  }
  return text.substr(begin, end - begin);
}

namespace {

std::optional<std::string> absolute_path(const json& params, const rpc::Reply& reply) {
  if (!params.is_object() || !params.contains("path") || !params["path"].is_string()) {
    reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"path\" is required");
    return std::nullopt;
  }
  std::string path = params["path"].get<std::string>();
  if (path.empty() || path[0] != '/') {
    reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"path\" must be absolute, got \"" + path + "\"");
    return std::nullopt;
  }
  return path;
}

}  // namespace

void GuestFiles::bind(rpc::Dispatcher& agent) {
  agent.on_request("fs/read_text_file", [this](json params, rpc::Reply reply) {
    auto path = absolute_path(params, reply);
    if (!path) return;
    protocol::ParamReader reader(params);
    auto line = reader.integer("line", false, 1);
    auto limit = reader.integer("limit", false, 0);
    if (!reader.ok()) return reply.error(reader.error());
    read_from(std::make_shared<Read>(Read{*path, line, limit, {}, reply}));
  });

  agent.on_request("fs/write_text_file", [this](json params, rpc::Reply reply) {
    auto path = absolute_path(params, reply);
    if (!path) return;
    if (!params.contains("content") || !params["content"].is_string())
      return reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"content\" must be a string");
    write_from(std::make_shared<Write>(Write{*path, params["content"].get<std::string>(), 0, reply}));
  });
}

void GuestFiles::read_from(std::shared_ptr<Read> read) {
  json params{{"sandboxId", sandbox_id_}, {"path", read->path}, {"offset", read->bytes.size()}};
  link_.call("file/read", params, std::chrono::seconds(60), [this, read, alive = std::weak_ptr<bool>(alive_)](LinkAnswer answer) {
    if (alive.expired()) return;
    if (!answer.ok()) return read->reply.error(acp_error_from_lockroom(*answer.error));
    std::string data = answer.result.value("data", "");
    if (answer.result.value("encoding", "") == "base64") {
      auto decoded = protocol::channel::base64_decode(data);
      if (!decoded) return read->reply.error(kAcpInternalError, "lockroom sent a read of " + read->path + " that is not valid base64");
      data = std::move(*decoded);
    }
    read->bytes += data;
    if (read->bytes.size() > kMaxReadBytes)
      return read->reply.error(kAcpInternalError, read->path + " is larger than " + std::to_string(kMaxReadBytes >> 20) +
                                                      " MiB; read it in parts with `line` and `limit`, or with a command");
    if (!answer.result.value("eof", true) && !data.empty()) return read_from(read);
    read->reply.result(json{{"content", select_lines(read->bytes, read->line, read->limit)}});
  });
}

void GuestFiles::write_from(std::shared_ptr<Write> write) {
  std::size_t chunk = std::min<std::size_t>(write->content.size() - write->done, protocol::kMaxFileChunk);
  // Cut at a character boundary so each chunk is valid UTF-8 text.
  while (chunk > 0 && write->done + chunk < write->content.size() &&
         (static_cast<unsigned char>(write->content[write->done + chunk]) & 0xC0) == 0x80)
    --chunk;
  json params{{"sandboxId", sandbox_id_}, {"path", write->path}, {"data", protocol::channel::base64_encode(write->content.substr(write->done, chunk))},
              {"encoding", "base64"}, {"append", write->done > 0}, {"mkdirs", true}};
  link_.call("file/write", params, std::chrono::seconds(60), [this, write, chunk, alive = std::weak_ptr<bool>(alive_)](LinkAnswer answer) {
    if (alive.expired()) return;
    if (!answer.ok()) return write->reply.error(acp_error_from_lockroom(*answer.error));
    write->done += chunk;
    if (write->done < write->content.size()) return write_from(write);
    write->reply.result(json::object());
  });
}

}  // namespace lockroom::acp
