// QmpClient: QEMU's machine protocol over the unix socket in a sandbox's state dir, on the libuv loop.
//
// connect() keeps trying the socket until QEMU has made it (or the deadline passes), reads the
// greeting, negotiates capabilities (`qmp_capabilities`), then reports ready. execute() sends one
// command with an id and calls back exactly once: with the `return` value, with QEMU's error
// (class and description), on its own timeout, or when the connection ends. Events go to the
// event callback. QEMU is a peer we started but do not trust to be well-behaved: a line that is
// not JSON, or longer than 1 MiB, ends the connection with a reason. Loop thread only; callbacks
// may destroy the client; nothing throws out of a libuv callback.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <uv.h>

#include "server/common/result.h"

namespace lockroom::vm {

class QmpClient {
 public:
  using ms = std::chrono::milliseconds;
  using ReplyFn = std::function<void(Result<nlohmann::json>)>;
  using EventFn = std::function<void(const std::string& event, const nlohmann::json& data)>;
  using ClosedFn = std::function<void(const std::string& reason)>;

  static constexpr std::size_t kMaxLineBytes = 1u << 20;

  explicit QmpClient(uv_loop_t* loop);
  ~QmpClient();
  QmpClient(const QmpClient&) = delete;
  QmpClient& operator=(const QmpClient&) = delete;

  void set_event_handler(EventFn fn) { on_event_ = std::move(fn); }
  // Called once when an established connection ends (not when close() is called).
  void set_closed_handler(ClosedFn fn) { on_closed_ = std::move(fn); }

  void connect(const std::filesystem::path& socket, ms timeout, std::function<void(Result<void>)> on_ready);
  void execute(const std::string& command, nlohmann::json arguments, ms timeout, ReplyFn on_reply);
  void execute(const std::string& command, ms timeout, ReplyFn on_reply) {
    execute(command, nlohmann::json(), timeout, std::move(on_reply));
  }
  bool ready() const { return ready_; }
  // Fails pending commands with kCancelled (their callbacks run) and closes the socket.
  void close();

 private:
  struct Pending {
    std::string command;
    ReplyFn on_reply;
    uv_timer_t* timer = nullptr;
  };

  void try_connect();
  void on_connected(int status);
  void on_line(const std::string& line);
  void send(const nlohmann::json& message);
  void finish_connect(Result<void> result);
  void fail_connection(const std::string& reason);
  void complete(std::uint64_t id, Result<nlohmann::json> result);
  void drop_socket();

  uv_loop_t* loop_;
  std::filesystem::path socket_path_;
  uv_pipe_t* pipe_ = nullptr;
  uv_timer_t* connect_timer_ = nullptr;  // retry tick and deadline
  std::uint64_t connect_deadline_ms_ = 0;
  std::function<void(Result<void>)> on_ready_;
  EventFn on_event_;
  ClosedFn on_closed_;
  std::string inbuf_;
  bool greeted_ = false;
  bool ready_ = false;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, Pending> pending_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// "QEMU refused <command>: <desc> (<class>)" for an error reply object.
std::string qmp_error_text(const std::string& command, const nlohmann::json& error);

}  // namespace lockroom::vm
