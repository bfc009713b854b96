// AcpSession: one ACP session of the face — a sandbox on the session's folder, the inner agent
// running in it, and everything between that agent and the editor.
//
// Opening: sandbox/create (workspace = the session's `cwd`, the face's kits and network), or a
// detached sandbox resumed (session_sandbox.h); the answer's `_meta.lockroom` names it,
// process/start of the agent at /workspace, the inner `initialize` (offering fs and terminal,
// which this session serves in the guest), `authenticate` again when the editor chose a method,
// then session/new or session/load with `cwd` = /workspace. The editor sees the agent's session
// id (suffixed when two sessions' agents chose the same one).
// Turns: session/prompt goes to the agent with host paths mapped to guest paths; its
// session/update and session/request_permission come back mapped to host paths; fs/* and
// terminal/* are served in the guest (guest_files.h, guest_terminals.h), and a tool call's
// terminal content is shown to the editor as that terminal's output text, kept current. When
// the agent ends the turn (not cancelled), the review runs (turn_review.h) before the editor
// gets the prompt's answer.
// Network: network/approve questions of this sandbox become request_permission (kind `fetch`);
// denied and blocked connections become failed `fetch` tool calls.
// Ending: session/close, the agent exiting (a turn in progress fails with what happened), the
// sandbox ending, or the face shutting down — which, with the shared server, detaches the
// sandbox instead of destroying it (session_sandbox.h). Loop thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/acp/acp_options.h"
#include "server/acp/guest_files.h"
#include "server/acp/guest_terminals.h"
#include "server/acp/inner_agent.h"
#include "server/acp/lockroom_link.h"
#include "server/acp/path_map.h"
#include "server/acp/turn_review.h"
#include "server/rpc/connection.h"

namespace lockroom::acp {

// What an opened session's inner agent said at `initialize`.
using InitializeSeen = std::function<void(const json& result)>;

class AcpSession {
 public:
  AcpSession(uv_loop_t* loop, LockroomLink& link, rpc::Connection& editor, const AcpOptions& options, std::string cwd);
  ~AcpSession();
  AcpSession(const AcpSession&) = delete;
  AcpSession& operator=(const AcpSession&) = delete;

  // Opens with `method` (session/new or session/load) and the editor's params. `id_taken` says
  // whether an editor-side session id is in use. `done` gets the result for the editor, or an error.
  void open(const std::string& method, json params, std::optional<std::string> auth_method, InitializeSeen seen,
            std::function<bool(const std::string&)> id_taken, std::function<void(rpc::CallOutcome)> done);

  void prompt(json params, rpc::Reply reply);
  void cancel();
  // session/set_mode, session/set_config_option and other session methods: to the agent as they are.
  void forward(const std::string& method, json params, rpc::Reply reply);
  // _lockroom/review, _lockroom/apply, _lockroom/discard (protocol/acp.md).
  void lockroom_review(rpc::Reply reply);
  void lockroom_apply(const json& params, rpc::Reply reply);
  void lockroom_discard(const json& params, rpc::Reply reply);
  // Ends the session: its terminals, its agent and its sandbox; `done` runs after.
  void close(std::function<void()> done);
  // The editor went away and the sandbox lives in the shared server: ends the agent and its
  // terminals but keeps the sandbox (session_sandbox.h resumes it); `done` runs after.
  void detach(std::function<void()> done);

  // Events of lockroom, routed here by the face.
  bool owns_process(const std::string& process_id) const;
  void process_output(const std::string& process_id, const std::string& stream, std::string_view bytes);
  void process_exited(const std::string& process_id, const json& params);
  void sandbox_ended(const std::string& reason, const std::string& message);
  void network_event(const json& params);
  void approve_network(const json& params, rpc::Reply reply);

  const std::string& id() const { return id_; }
  const std::string& sandbox_id() const { return sandbox_id_; }
  bool ended() const { return !ended_why_.empty(); }

 private:
  void start_agent(std::function<void(std::optional<std::string>)> done);
  void bind_agent_requests();
  void from_agent_update(json params);
  void show_terminal(const std::string& terminal_id);
  json terminal_text(const std::string& terminal_id) const;
  void end(const std::string& why);
  // Ends the session's turn, questions, review and terminals, recording `why`; false when it had
  // ended already (close and detach do the rest).
  bool stop(const std::string& why);
  void finish_turn(json result);
  rpc::RpcError ended_error() const;

  uv_loop_t* loop_;
  LockroomLink& link_;
  rpc::Connection& editor_;
  const AcpOptions& options_;
  PathMap paths_;
  std::string id_;           // the editor's name for the session
  std::string inner_id_;     // the agent's
  std::string sandbox_id_;
  std::unique_ptr<InnerAgent> agent_;
  std::unique_ptr<GuestFiles> files_;
  std::unique_ptr<GuestTerminals> terminals_;
  // The turn in progress: the editor's prompt request, and the review after it.
  std::optional<rpc::Reply> turn_;
  std::unique_ptr<TurnReview> review_;
  bool cancelled_ = false;
  int reviews_ = 0;
  // Tool calls whose content shows a terminal: their content as the agent sent it, by tool call id.
  std::map<std::string, json> terminal_calls_;
  std::map<std::string, std::set<std::string>> calls_of_terminal_;
  std::set<std::string> terminal_refresh_due_;
  bool terminal_refresh_armed_ = false;
  // Questions lockroom asked before the editor knew this session (while it opened): asked once
  // it has its id, or denied if it never does.
  std::vector<std::pair<json, rpc::Reply>> held_approvals_;
  // Denied connections already shown, by host:port (bounded).
  std::set<std::string> denied_shown_;
  std::string ended_why_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::acp
