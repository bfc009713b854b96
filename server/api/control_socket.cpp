// ControlSocket; see control_socket.h.
#include "server/api/control_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>

#include "server/common/uv_defer.h"
#include "server/common/uv_handle.h"
#include "server/rpc/framing.h"
#include "server/rpc/stdio_transport.h"
#include "server/rpc/uv_scheduler.h"

namespace lockroom::api {

namespace fs = std::filesystem;

// Pending connections the kernel holds until accepted (more than kMaxClients, so that the ones
// past it are accepted and closed rather than left hanging in connect()).
constexpr int kBacklog = 32;

// One peer: its bytes, its framing, its dispatcher (the same layers as an editor connection).
struct ControlSocket::Client {
  rpc::UvScheduler scheduler;
  rpc::StdioTransport transport;
  rpc::NdjsonFraming framing{kMaxRequestBytes};
  rpc::Dispatcher dispatcher;
  std::vector<rpc::FrameEvent> events;
  bool gone = false;

  Client(uv_loop_t* loop, int in_fd, int out_fd)
      : scheduler(loop),
        transport(loop, in_fd, out_fd),
        dispatcher([this](std::string message) { transport.write(framing.encode(message)); }, scheduler) {}
  ~Client() { scheduler.cancel_all(); }

  void on_bytes(std::string_view bytes) {
    events.clear();
    framing.feed(bytes, events);
    for (rpc::FrameEvent& event : events) {
      if (gone) return;
      if (event.kind == rpc::FrameEvent::Kind::kMessage) dispatcher.handle_message(event.text);
      else dispatcher.handle_framing_error(event.text);
    }
  }
};

namespace {

std::string errno_text() { return std::strerror(errno); }

// The uid of the process at the other end of a connected unix socket.
std::optional<uid_t> peer_uid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return cred.uid;
}

}  // namespace

Result<std::unique_ptr<ControlSocket>> ControlSocket::listen(uv_loop_t* loop, fs::path path, Bind bind) {
  // libuv would silently cut a path longer than sun_path; refuse it instead.
  if (path.native().size() >= sizeof(sockaddr_un{}.sun_path))
    return make_error(ErrorCode::kInvalidInput, "the control socket path " + path.string() + " is longer than " +
                                                    std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) +
                                                    " bytes: use a shorter state dir (XDG_STATE_HOME)");
  ::unlink(path.c_str());
  auto* listener = new_handle<uv_pipe_t>(nullptr);
  uv_pipe_init(loop, listener, 0);
  auto fail = [&](const std::string& what, int rc) -> Error {
    close_handle(listener);
    ::unlink(path.c_str());
    return make_error(ErrorCode::kUnavailable, what + " " + path.string() + ": " + uv_strerror(rc));
  };
  if (int rc = uv_pipe_bind(listener, path.c_str()); rc < 0) return fail("cannot create the control socket", rc);
  if (::chmod(path.c_str(), 0600) != 0) return fail("cannot make the control socket private", -errno);
  std::unique_ptr<ControlSocket> self(new ControlSocket(loop, path, std::move(bind)));
  listener->data = self.get();
  auto on_connection = [](uv_stream_t* server, int status) {
    auto* owner = static_cast<ControlSocket*>(server->data);
    if (!owner) return;
    if (status < 0) return spdlog::warn("control socket {}: {}", owner->path_.string(), uv_strerror(status));
    owner->accept_one();
  };
  if (int rc = uv_listen(reinterpret_cast<uv_stream_t*>(listener), kBacklog, on_connection); rc < 0) {
    listener->data = nullptr;
    self->path_.clear();  // `fail` removes the file
    return fail("cannot listen on the control socket", rc);
  }
  self->listener_ = listener;
  return self;
}

ControlSocket::ControlSocket(uv_loop_t* loop, fs::path path, Bind bind) : loop_(loop), path_(std::move(path)), bind_(std::move(bind)) {}

ControlSocket::~ControlSocket() {
  *alive_ = false;
  close_handle(listener_);
  clients_.clear();
  if (!path_.empty()) ::unlink(path_.c_str());
}

void ControlSocket::accept_one() {
  auto* peer = new_handle<uv_pipe_t>(nullptr);
  uv_pipe_init(loop_, peer, 0);
  if (int rc = uv_accept(reinterpret_cast<uv_stream_t*>(listener_), reinterpret_cast<uv_stream_t*>(peer)); rc < 0) {
    spdlog::warn("control socket {}: accept failed: {}", path_.string(), uv_strerror(rc));
    return close_handle(peer);
  }
  uv_os_fd_t fd = -1;
  uv_fileno(reinterpret_cast<uv_handle_t*>(peer), &fd);
  auto uid = peer_uid(fd);
  if (!uid || *uid != geteuid()) {
    refused_peers_++;
    spdlog::warn("control socket {}: refused a peer of uid {} (only uid {} may connect)", path_.string(),
                 uid ? std::to_string(*uid) : "unknown", geteuid());
    return close_handle(peer);
  }
  if (clients_.size() >= kMaxClients) {
    refused_peers_++;
    spdlog::warn("control socket {}: refused a peer: {} are connected already", path_.string(), clients_.size());
    return close_handle(peer);
  }
  // The peer's own descriptors (one to read, one to write) for the transport; the accepted
  // handle closes the original.
  int in_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  int out_fd = in_fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
  close_handle(peer);
  if (in_fd < 0 || out_fd < 0) {
    spdlog::warn("control socket {}: cannot take a connection: {}", path_.string(), errno_text());
    if (in_fd >= 0) ::close(in_fd);
    return;
  }
  add_client(in_fd, out_fd);
}

void ControlSocket::add_client(int in_fd, int out_fd) {
  auto client = std::make_unique<Client>(loop_, in_fd, out_fd);
  Client* raw = client.get();
  bind_(raw->dispatcher);
  auto gone = [this, raw, alive = alive_] {
    if (raw->gone) return;
    raw->gone = true;
    // Not from inside the transport's own callback: on a later turn.
    defer(loop_, [this, raw, alive] {
      if (*alive) drop_client(raw);
    });
  };
  auto started = raw->transport.start(rpc::StdioTransport::Callbacks{
      [raw](std::string_view bytes) { raw->on_bytes(bytes); },
      gone,
      [gone](const std::string&) { gone(); },
  });
  if (!started) {
    spdlog::warn("control socket {}: cannot serve a connection: {}", path_.string(), started.error().message);
    return;  // the transport closes what it opened; `client` goes here
  }
  spdlog::debug("control socket {}: a peer connected ({} now)", path_.string(), clients_.size() + 1);
  clients_.push_back(std::move(client));
}

void ControlSocket::drop_client(Client* client) {
  std::erase_if(clients_, [client](const std::unique_ptr<Client>& c) { return c.get() == client; });
}

}  // namespace lockroom::api
