// GuestTerminals: ACP's terminal/* requests of the inner agent, served inside its sandbox.
//
// terminal/create starts the command as a guest process (pipes, cwd /workspace unless given)
// through lockroom's process/start; its stdout and stderr are kept in arrival order, bounded by
// the request's `outputByteLimit` (the oldest bytes go first, cut at a character boundary, and
// `truncated` says so) or by kMaxOutputBytes. terminal/output, wait_for_exit, kill and release
// follow the ACP spec (protocol/acp.md). The editor never gets these terminal ids: the session
// shows a tool call's `terminal` content to it as the output text (see acp_session.h), kept
// current through `on_change`. Loop thread only.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/acp/lockroom_link.h"
#include "server/rpc/dispatcher.h"

namespace lockroom::acp {

class GuestTerminals {
 public:
  static constexpr std::size_t kMaxOutputBytes = 16u << 20;
  static constexpr std::size_t kMaxTerminals = 64;
  static constexpr std::size_t kMaxReleasedKept = 64;
  static constexpr std::size_t kReleasedTailBytes = 64u << 10;

  GuestTerminals(LockroomLink& link, std::string sandbox_id);
  // Registers terminal/* on the inner agent's dispatcher.
  void bind(rpc::Dispatcher& agent);

  // Events of lockroom's processes; false when the process is not one of these terminals.
  bool output(const std::string& process_id, std::string_view bytes);
  bool exited(const std::string& process_id, const json& exit);

  // For the editor's view of a terminal: its command, output so far and exit, or nullopt.
  struct Snapshot {
    std::string command;
    std::string output;
    bool truncated = false;
    std::optional<json> exit;
  };
  // A released terminal keeps its last snapshot (the tail of its output, kReleasedTailBytes) for
  // the tool calls that show it; the kMaxReleasedKept most recent ones.
  std::optional<Snapshot> snapshot(const std::string& terminal_id) const;
  bool has(const std::string& terminal_id) const { return terminals_.count(terminal_id) > 0; }
  // Runs after each change of a terminal's output or exit (with its id).
  void on_change(std::function<void(const std::string&)> fn) { on_change_ = std::move(fn); }
  // Kills every terminal still running (the session is ending).
  void kill_all();

 private:
  struct Terminal {
    std::string command;
    std::string output;
    std::size_t limit = kMaxOutputBytes;
    bool truncated = false;
    std::optional<json> exit;  // {exitCode, signal}
    std::vector<rpc::Reply> waiting;
  };
  void create(json params, rpc::Reply reply);
  Terminal* find(const json& params, const rpc::Reply& reply);
  void kill(const std::string& id, std::function<void()> done);

  LockroomLink& link_;
  std::string sandbox_id_;
  void keep_released(const std::string& id, const Terminal& t);

  std::map<std::string, std::unique_ptr<Terminal>> terminals_;  // by terminal id (= lockroom process id)
  std::map<std::string, Snapshot> released_;                     // last snapshots of released terminals
  std::deque<std::string> released_order_;                       // oldest first
  std::function<void(const std::string&)> on_change_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Drops bytes from the front of `text` until it is at most `limit` bytes, never cutting a UTF-8
// sequence; true when something was dropped. (Exposed for tests.)
bool keep_tail(std::string& text, std::size_t limit);

}  // namespace lockroom::acp
