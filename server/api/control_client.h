// The CLI's side of a sandbox's control socket (control_socket.h, control_endpoints.h): which
// sandbox the user meant, why it cannot be reached, and JSON-RPC calls to the process that owns
// it. Used by `lockroom diff` and `lockroom apply`.
//
// find_control_target() reads the sandbox.json records (sandbox_registry.h) and names, in its
// error, what does exist. ControlClient is blocking (the CLI has nothing else to do while it
// waits): one request at a time, a deadline per call, replies bounded by kMaxReplyBytes. It only
// talks to a socket whose server is the record's owner process under this uid (SO_PEERCRED).
// CLI thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "protocol/jsonrpc.h"
#include "server/common/result.h"
#include "server/core/sandbox_registry.h"
#include "server/rpc/framing.h"

namespace lockroom::api {

// The live sandbox that `id_or_prefix` names under `state_root`. The error says which sandboxes
// run instead, that its owner process is gone, or that the owner serves no control socket.
// `owner_alive(pid)`: whether that lockroom still runs (injectable for tests).
Result<core::SandboxRecord> find_control_target(const std::filesystem::path& state_root, const std::string& id_or_prefix,
                                                const std::function<bool(int)>& owner_alive);

class ControlClient {
 public:
  static constexpr std::size_t kMaxReplyBytes = 512u << 20;

  // Connects to the record's control socket and checks that its owner process serves it.
  static Result<ControlClient> connect(const core::SandboxRecord& record);
  ControlClient(ControlClient&& other) noexcept;
  ControlClient& operator=(ControlClient&&) = delete;
  ~ControlClient();

  // Sends one request and waits for its reply. An error reply becomes an Error with the
  // server's message (code from its `kind`).
  Result<protocol::json> call(std::string_view method, const protocol::json& params, std::chrono::milliseconds timeout);
  const std::string& sandbox_id() const { return sandbox_id_; }

 private:
  ControlClient(int fd, std::string sandbox_id, int owner_pid);
  Result<void> send_all(const std::string& bytes);

  int fd_;
  std::string sandbox_id_;
  int owner_pid_;
  rpc::NdjsonFraming framing_{kMaxReplyBytes};
  std::int64_t next_id_ = 1;
};

}  // namespace lockroom::api
