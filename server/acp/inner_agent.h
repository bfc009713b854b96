// InnerAgent: the ACP stream of the agent running inside a sandbox — JSON-RPC 2.0, one message
// per line, over the guest process's stdin and stdout, carried by lockroom's process/write and
// process/output. Its stderr goes to lockroom's log. Requests to the agent are `call`s of the
// dispatcher; the agent's requests and notifications reach the handlers registered on it.
// Loop thread only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <uv.h>

#include "server/acp/lockroom_link.h"
#include "server/rpc/dispatcher.h"
#include "server/rpc/framing.h"
#include "server/rpc/uv_scheduler.h"

namespace lockroom::acp {

class InnerAgent {
 public:
  InnerAgent(uv_loop_t* loop, LockroomLink& link, std::string process_id, std::string label);
  ~InnerAgent();
  InnerAgent(const InnerAgent&) = delete;
  InnerAgent& operator=(const InnerAgent&) = delete;

  rpc::Dispatcher& rpc() { return dispatcher_; }
  const std::string& process_id() const { return process_id_; }

  // The process's output (already decoded from base64).
  void output(std::string_view stream, std::string_view bytes);
  // The process ended: every call still waiting fails with `why`; nothing more is sent.
  void exited(const std::string& why);
  bool running() const { return running_; }

 private:
  void send(std::string message);

  LockroomLink& link_;
  std::string process_id_;
  std::string label_;
  rpc::UvScheduler scheduler_;
  rpc::NdjsonFraming framing_;
  rpc::Dispatcher dispatcher_;
  std::vector<rpc::FrameEvent> events_;
  std::string stderr_line_;
  bool running_ = true;
};

}  // namespace lockroom::acp
