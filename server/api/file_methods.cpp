// file/read and file/write; see file_methods.h.
#include "server/api/file_methods.h"

#include "protocol/channel/messages.h"
#include "protocol/files.h"
#include "server/api/error_map.h"
#include "server/channel/agent_client.h"

namespace lockroom::api {

using protocol::json;
using protocol::ParamReader;
using rpc::Reply;

void bind_file_methods(rpc::Dispatcher& d, core::SandboxManager& manager) {
  core::SandboxManager* m = &manager;

  d.on_request("file/read", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_file_read(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto agent = m->guest_files(p.sandbox_id);
    if (!agent) return reply.error(to_rpc_error(agent.error()));
    channel::wire::FileReadParams read;
    read.path = p.path;
    read.offset = p.offset;
    read.length = p.length;
    (*agent)->read_file(read, [reply](Result<channel::wire::FileReadResult> r) {
      if (!r) return reply.error(to_rpc_error(r.error()));
      reply.result(protocol::file_read_json(r->data, r->size, r->eof));
    });
  });

  d.on_request("file/write", [m](const json& params, Reply reply) {
    ParamReader reader(params);
    auto p = protocol::read_file_write(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto agent = m->guest_files(p.sandbox_id);
    if (!agent) return reply.error(to_rpc_error(agent.error()));
    channel::wire::FileWriteParams write;
    write.path = p.path;
    write.data = std::move(p.data);
    if (p.mode) write.mode = *p.mode;
    write.append = p.append;
    write.mkdirs = p.mkdirs;
    (*agent)->write_file(write, [reply](Result<channel::wire::FileWriteResult> r) {
      if (!r) return reply.error(to_rpc_error(r.error()));
      reply.result(json{{"written", r->written}});
    });
  });
}

}  // namespace lockroom::api
