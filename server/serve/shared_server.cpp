// The shared server; see shared_server.h.
#include "server/serve/shared_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <spdlog/spdlog.h>

#include "server/common/uv_defer.h"
#include "server/common/uv_handle.h"
#include "server/serve/hello.h"
#include "server/serve/server_core.h"
#include "server/serve/server_dir.h"

namespace lockroom::serve {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kBacklog = 32;
constexpr std::size_t kMaxPeers = 64;
constexpr auto kHelloTimeout = std::chrono::seconds(10);
// A closed session is freed this long after it ended: replies still being worked on for it (a
// create's boot, an apply) hold its connection until they finish.
constexpr auto kRetiredLifetime = std::chrono::hours(1);

std::optional<uid_t> peer_uid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return cred.uid;
}

// Whether a server already answers at `path`.
bool someone_listens(const fs::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// Stops the server on SIGTERM, SIGINT and SIGHUP.
struct Signals {
  std::vector<uv_signal_t*> handles;
  std::function<void(int)> fn;
  Signals(uv_loop_t* loop, std::function<void(int)> on_signal) : fn(std::move(on_signal)) {
    for (int signum : {SIGTERM, SIGINT, SIGHUP}) {
      auto* h = new_handle<uv_signal_t>(this);
      uv_signal_init(loop, h);
      uv_signal_start(h, [](uv_signal_t* h, int signum) {
        if (auto* self = static_cast<Signals*>(h->data)) self->fn(signum);
      }, signum);
      handles.push_back(h);
    }
  }
  ~Signals() { close(); }
  void close() {
    for (auto*& h : handles) close_handle(h);
    handles.clear();
  }
};

class SharedServer {
 public:
  SharedServer(uv_loop_t* loop, const SharedServerOptions& options, core::ManagerConfig config, protocol::ServerInfo info)
      : loop_(loop), options_(options), core_(loop, std::move(config), options.router), info_(std::move(info)) {
    core_.router.on_change([this] { last_activity_ = Clock::now(); });
  }

  Result<void> listen(const fs::path& path) {
    if (path.native().size() >= sizeof(sockaddr_un{}.sun_path))
      return make_error(ErrorCode::kInvalidInput, "the server socket path " + path.string() + " is too long; set LOCKROOM_SERVER_DIR to a shorter folder");
    if (someone_listens(path)) return make_error(ErrorCode::kWrongState, "another lockroom server already listens at " + path.string());
    ::unlink(path.c_str());
    listener_ = new_handle<uv_pipe_t>(this);
    uv_pipe_init(loop_, listener_, 0);
    if (int rc = uv_pipe_bind(listener_, path.c_str()); rc < 0)
      return make_error(ErrorCode::kUnavailable, "cannot create the server socket " + path.string() + ": " + uv_strerror(rc));
    path_ = path;
    if (::chmod(path.c_str(), 0600) != 0)
      return make_error(ErrorCode::kUnavailable, "cannot make the server socket " + path.string() + " private: " + std::strerror(errno));
    int rc = uv_listen(reinterpret_cast<uv_stream_t*>(listener_), kBacklog, [](uv_stream_t* server, int status) {
      auto* self = static_cast<SharedServer*>(server->data);
      if (!self) return;
      if (status < 0) return spdlog::warn("server socket: {}", uv_strerror(status));
      self->accept_one();
    });
    if (rc < 0) return make_error(ErrorCode::kUnavailable, "cannot listen on " + path.string() + ": " + uv_strerror(rc));
    spdlog::info("lockroom server {} (pid {}) listening on {}", info_.version, ::getpid(), path.string());
    start_ticks();
    return {};
  }

  // Ends everything: no new peers, every sandbox ends, then every connection closes.
  void finish(int code) {
    if (finishing_) return;
    finishing_ = true;
    exit_code_ = code;
    // The socket file goes first: a bridge that comes now starts a new server, and this one
    // never touches the path again.
    if (!path_.empty()) ::unlink(path_.c_str());
    close_handle(listener_);
    close_handle(tick_);
    if (signals_) signals_->close();
    pending_.clear();
    // Sandboxes end first (their last notifications still reach their editors), then every
    // connection closes without an end record: its bridge reports that the server went away.
    // The sessions are freed with the server, after the loop has closed their handles.
    core_.manager.shutdown([this] {
      for (auto& [id, session] : live_) retire(std::move(session), "");
      live_.clear();
    });
  }

  int exit_code() const { return exit_code_; }
  // The signals that end the server; closed when it finishes (else they keep the loop running).
  void handle_signals() {
    signals_ = std::make_unique<Signals>(loop_, [this](int signum) {
      spdlog::info("received signal {}; ending every sandbox and exiting", signum);
      finish(0);
    });
  }

 private:
  struct Pending {
    SharedServer* owner;
    uv_pipe_t* pipe = nullptr;
    uv_timer_t* timer = nullptr;
    std::string buffer;
    ~Pending() {
      close_handle(pipe);
      close_handle(timer);
    }
  };
  struct Retired {
    Clock::time_point since;
    std::unique_ptr<Session> session;
  };

  void accept_one() {
    auto* peer = new_handle<uv_pipe_t>(nullptr);
    uv_pipe_init(loop_, peer, 0);
    if (int rc = uv_accept(reinterpret_cast<uv_stream_t*>(listener_), reinterpret_cast<uv_stream_t*>(peer)); rc < 0) {
      spdlog::warn("server socket: accept failed: {}", uv_strerror(rc));
      return close_handle(peer);
    }
    uv_os_fd_t fd = -1;
    uv_fileno(reinterpret_cast<uv_handle_t*>(peer), &fd);
    auto uid = peer_uid(fd);
    if (!uid || *uid != ::geteuid()) {
      spdlog::warn("server socket: refused a peer of uid {} (only uid {} may connect)", uid ? std::to_string(*uid) : "unknown", ::geteuid());
      return close_handle(peer);
    }
    if (live_.size() + pending_.size() >= kMaxPeers) {
      spdlog::warn("server socket: refused a peer: {} are connected already", live_.size() + pending_.size());
      return close_handle(peer);
    }
    auto pending = std::make_unique<Pending>();
    Pending* p = pending.get();
    p->owner = this;
    p->pipe = peer;
    peer->data = p;
    p->timer = new_handle<uv_timer_t>(p);
    uv_timer_init(loop_, p->timer);
    uv_timer_start(p->timer, [](uv_timer_t* t) {
      if (auto* p = static_cast<Pending*>(t->data)) p->owner->refuse(p, "no hello within 10 s");
    }, std::chrono::duration_cast<std::chrono::milliseconds>(kHelloTimeout).count(), 0);
    pending_.push_back(std::move(pending));
    uv_read_start(reinterpret_cast<uv_stream_t*>(peer),
                  [](uv_handle_t*, std::size_t, uv_buf_t* buf) {
                    static char storage[4096];
                    *buf = uv_buf_init(storage, sizeof storage);
                  },
                  [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
                    auto* p = static_cast<Pending*>(stream->data);
                    if (!p) return;
                    if (n < 0) return p->owner->drop(p);
                    p->buffer.append(buf->base, static_cast<std::size_t>(n));
                    p->owner->maybe_hello(p);
                  });
  }

  void maybe_hello(Pending* p) {
    auto newline = p->buffer.find('\n');
    if (newline == std::string::npos) {
      if (p->buffer.size() > kMaxHelloBytes) refuse(p, "the hello is longer than 1 MiB");
      return;
    }
    if (newline + 1 != p->buffer.size()) return refuse(p, "bytes after the hello, before the welcome");
    auto hello = read_hello(std::string_view(p->buffer).substr(0, newline));
    if (!hello) return refuse(p, hello.error().message);
    uv_read_stop(reinterpret_cast<uv_stream_t*>(p->pipe));
    uv_os_fd_t fd = -1;
    uv_fileno(reinterpret_cast<uv_handle_t*>(p->pipe), &fd);
    int in_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    int out_fd = in_fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
    drop(p);  // closes the accepted handle; the session has its own descriptors
    if (in_fd < 0 || out_fd < 0) {
      spdlog::warn("server socket: cannot take a connection: {}", std::strerror(errno));
      if (in_fd >= 0) ::close(in_fd);
      return;
    }
    start_session(std::move(*hello), in_fd, out_fd);
  }

  void start_session(Hello hello, int in_fd, int out_fd) {
    SessionId id = next_id_++;
    rpc::ConnectionOptions conn{hello.framing, hello.max_message_bytes, in_fd, out_fd};
    auto env = std::make_shared<const std::map<std::string, std::string>>(std::move(hello.env));
    std::string label = "connection " + std::to_string(id) + " (bridge pid " + std::to_string(hello.pid) + ")";
    auto session = std::make_unique<Session>(core_.services(info_, options_.test_mode), id, conn, env, label);
    Session* raw = session.get();
    live_[id] = std::move(session);
    auto started = raw->start([this, id](int code) {
      // Not from inside the connection's own callbacks.
      defer(loop_, [this, id, code, alive = alive_] {
        if (*alive) end_session(id, code);
      });
    });
    if (!started) {
      spdlog::warn("{}: cannot serve it: {}", label, started.error().message);
      return end_session(id, 1);
    }
    raw->connection().write_raw(welcome_line(Welcome{::getpid(), options_.log.string()}));
    spdlog::info("{} connected ({} now)", label, live_.size());
  }

  void end_session(SessionId id, int code) {
    auto it = live_.find(id);
    if (it == live_.end()) return;
    std::unique_ptr<Session> session = std::move(it->second);
    live_.erase(it);
    spdlog::info("connection {} ended (exit code {}); {} still connected, {} sandboxes detached", id, code, live_.size(),
                 core_.router.detached());
    retire(std::move(session), end_record(code));
    last_activity_ = Clock::now();
  }

  void retire(std::unique_ptr<Session> session, std::string trailer) {
    session->close(std::move(trailer), [] {});
    retired_.push_back(Retired{Clock::now(), std::move(session)});
  }

  void refuse(Pending* p, const std::string& why) {
    spdlog::warn("server socket: refused a connection: {}", why);
    std::string line = refusal_line(why);
    uv_buf_t buf = uv_buf_init(line.data(), static_cast<unsigned>(line.size()));
    uv_try_write(reinterpret_cast<uv_stream_t*>(p->pipe), &buf, 1);
    drop(p);
  }

  void drop(Pending* p) {
    std::erase_if(pending_, [p](const std::unique_ptr<Pending>& q) { return q.get() == p; });
  }

  void start_ticks() {
    auto every = std::clamp<std::int64_t>(options_.idle_exit.count() / 4, 50, 5000);
    tick_ = new_handle<uv_timer_t>(this);
    uv_timer_init(loop_, tick_);
    last_activity_ = Clock::now();
    uv_timer_start(tick_, [](uv_timer_t* t) {
      if (auto* self = static_cast<SharedServer*>(t->data)) self->tick();
    }, every, every);
  }

  void tick() {
    auto now = Clock::now();
    std::erase_if(retired_, [&](const Retired& r) { return now - r.since > kRetiredLifetime; });
    bool idle = live_.empty() && pending_.empty() && core_.manager.list().empty();
    if (!idle) {
      last_activity_ = now;
      return;
    }
    if (now - last_activity_ >= options_.idle_exit) {
      spdlog::info("no connection and no sandbox for {} ms: exiting", options_.idle_exit.count());
      finish(0);
    }
  }

  uv_loop_t* loop_;
  SharedServerOptions options_;
  ServerCore core_;
  protocol::ServerInfo info_;
  fs::path path_;
  uv_pipe_t* listener_ = nullptr;
  uv_timer_t* tick_ = nullptr;
  std::vector<std::unique_ptr<Pending>> pending_;
  std::map<SessionId, std::unique_ptr<Session>> live_;
  std::vector<Retired> retired_;
  SessionId next_id_ = 1;
  Clock::time_point last_activity_ = Clock::now();
  bool finishing_ = false;
  int exit_code_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<Signals> signals_;

 public:
  ~SharedServer() {
    *alive_ = false;
    close_handle(listener_);
    close_handle(tick_);
  }
};

}  // namespace

int run_shared_server(const SharedServerOptions& options, core::ManagerConfig config, protocol::ServerInfo info) {
  std::signal(SIGPIPE, SIG_IGN);
  if (auto dir = ensure_private_dir(options.dir); !dir) {
    spdlog::error("{}", dir.error().message);
    return 1;
  }
  fs::path socket = server_socket_path(options.dir, info.version);
  uv_loop_t loop;
  uv_loop_init(&loop);
  int code = 1;
  {
    SharedServer server(&loop, options, std::move(config), info);
    server.handle_signals();
    if (auto listening = server.listen(socket); !listening) {
      spdlog::error("{}", listening.error().message);
      server.finish(1);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    code = server.exit_code();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  if (int rc = uv_loop_close(&loop); rc != 0) spdlog::error("bug: handles left open at exit ({})", uv_strerror(rc));
  return code;
}

}  // namespace lockroom::serve
