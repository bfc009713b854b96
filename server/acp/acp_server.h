// AcpServer: `lockroom acp` — an ACP v1 agent on stdio (JSON-RPC, one message per line) that runs
// another ACP agent in a lockroom sandbox per session (protocol/acp.md).
//
// It answers `initialize` itself, with lockroom's agentInfo and the inner agent's capabilities
// and auth methods. Those come from a cache per kit list and argv (<cache>/acp/); on a miss the
// inner agent is asked once in a sandbox without a workspace (the "probe"), and every session's
// own `initialize` refreshes the cache, so a new version of the agent is seen from the next start.
// `authenticate` is remembered and replayed to each session's agent before its session/new.
// Session methods go to their AcpSession (acp_session.h); lockroom's events are routed to the
// session owning the sandbox or process. End of stdin, or SIGTERM/SIGINT/SIGHUP, ends every
// session and its sandbox, then the process. Loop thread only.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <uv.h>

#include "server/acp/acp_options.h"
#include "server/acp/acp_session.h"
#include "server/acp/inner_agent.h"
#include "server/acp/lockroom_link.h"
#include "server/rpc/connection.h"

namespace lockroom::acp {

class AcpServer {
 public:
  AcpServer(uv_loop_t* loop, LockroomLink& link, AcpOptions options, std::filesystem::path cache_dir, rpc::ConnectionOptions editor);
  ~AcpServer();
  AcpServer(const AcpServer&) = delete;
  AcpServer& operator=(const AcpServer&) = delete;

  // Starts reading the editor; `on_end` runs once when the editor is gone (end of input).
  Result<void> start(std::function<void()> on_end);
  // Ends every session (their sandboxes), then closes the editor connection; `done` runs after.
  void stop(std::function<void()> done);

 private:
  void bind_editor_methods();
  void bind_lockroom_events();
  void initialize(json params, rpc::Reply reply);
  void answer_initialize(const json& inner, rpc::Reply reply);
  void probe();
  void probe_answered(rpc::CallOutcome outcome, bool sandbox_failed);
  void remember_initialize(const json& inner);
  void open_session(const std::string& method, json params, rpc::Reply reply);
  AcpSession* session_for(const json& params, const rpc::Reply& reply);
  AcpSession* session_of_sandbox(const std::string& sandbox_id);
  AcpSession* session_of_process(const std::string& process_id);

  uv_loop_t* loop_;
  LockroomLink& link_;
  AcpOptions options_;
  std::filesystem::path cache_file_;
  rpc::Connection editor_;
  std::optional<std::string> auth_method_;
  std::map<std::string, std::unique_ptr<AcpSession>> sessions_;  // by the editor's session id
  std::vector<std::unique_ptr<AcpSession>> opening_;              // not answered yet
  // The probe: the inner agent in a sandbox without a workspace, asked `initialize` once.
  std::string probe_sandbox_;
  std::unique_ptr<InnerAgent> probe_agent_;
  std::vector<rpc::Reply> waiting_for_probe_;
  bool stopping_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The cache file of the inner agent's initialize answer for these options.
std::filesystem::path initialize_cache_file(const std::filesystem::path& cache_dir, const AcpOptions& options);

}  // namespace lockroom::acp
