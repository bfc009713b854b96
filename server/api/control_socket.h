// ControlSocket: a local JSON-RPC endpoint for other processes of the same user — how
// `lockroom diff` and `lockroom apply` reach a sandbox that another lockroom (an editor's
// `serve`, or a `lockroom run` still running) owns.
//
// A unix stream socket, made 0600 (it lives in the sandbox's 0700 state dir), speaking
// newline-delimited JSON-RPC 2.0. Each accepted peer gets its own ndjson framing and Dispatcher,
// on which `bind` registers the only methods that peer may call (the caller decides the set;
// control_endpoints.h binds the changes/* review methods). A peer whose uid (SO_PEERCRED) is not
// this process's effective uid is closed at once, as is any peer past kMaxClients. Requests are
// small: a line over kMaxRequestBytes is answered with a parse error and skipped. A peer keeps
// its connection open until its replies have arrived; when it goes, replies still being worked
// on are dropped. Destroying the object closes every connection and removes the socket file.
// Loop thread only.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include <uv.h>

#include "server/common/result.h"
#include "server/rpc/dispatcher.h"

namespace lockroom::api {

class ControlSocket {
 public:
  using Bind = std::function<void(rpc::Dispatcher&)>;
  static constexpr std::size_t kMaxClients = 8;
  static constexpr std::size_t kMaxRequestBytes = 1u << 20;

  // Binds and listens at `path` (an existing file there is replaced: it can only be a stale
  // socket of this sandbox's dir).
  static Result<std::unique_ptr<ControlSocket>> listen(uv_loop_t* loop, std::filesystem::path path, Bind bind);
  ~ControlSocket();
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::size_t clients() const { return clients_.size(); }
  std::size_t refused_peers() const { return refused_peers_; }

 private:
  struct Client;
  ControlSocket(uv_loop_t* loop, std::filesystem::path path, Bind bind);
  void accept_one();
  void add_client(int in_fd, int out_fd);
  void drop_client(Client* client);

  uv_loop_t* loop_;
  std::filesystem::path path_;
  Bind bind_;
  uv_pipe_t* listener_ = nullptr;
  std::vector<std::unique_ptr<Client>> clients_;
  std::size_t refused_peers_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::api
