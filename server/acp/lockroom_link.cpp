// LockroomLink; see lockroom_link.h.
#include "server/acp/lockroom_link.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace lockroom::acp {

namespace {

rpc::ConnectionOptions options_on(int fd) {
  rpc::ConnectionOptions options;
  options.framing = rpc::FramingKind::kContentLength;
  options.in_fd = fd;
  options.out_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  return options;
}

}  // namespace

LockroomLink::LockroomLink(uv_loop_t* loop, core::ManagerConfig config, const std::string& version, int server_fd, int client_fd)
    : loop_(loop),
      core_(loop, std::move(config), serve::RouterOptions{}),
      session_(core_.services(protocol::ServerInfo{"lockroom", version}, false), 1, options_on(server_fd), nullptr, "the ACP face"),
      client_(loop, options_on(client_fd)) {}

LockroomLink::~LockroomLink() = default;

Result<std::unique_ptr<LockroomLink>> LockroomLink::start(uv_loop_t* loop, core::ManagerConfig config, const std::string& version,
                                                          std::function<void(Result<void>)> ready) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(ErrorCode::kUnavailable, std::string("cannot make a socketpair: ") + std::strerror(errno));
  std::unique_ptr<LockroomLink> link(new LockroomLink(loop, std::move(config), version, fds[0], fds[1]));
  LockroomLink* self = link.get();
  if (auto started = self->session_.start([](int) {}); !started) return started.error();
  if (auto started = self->client_.start([self] {
        if (!self->shutting_down_) spdlog::error("lockroom acp: the in-process server closed its end");
      });
      !started)
    return started.error();
  json params = {{"processId", static_cast<int>(::getpid())},
                 {"clientInfo", {{"name", "lockroom-acp"}, {"version", version}}},
                 {"capabilities", {{"experimental", {{"lockroom", {{"networkApproval", true}}}}}}}};
  self->call("initialize", params, std::chrono::seconds(30), [self, ready = std::move(ready)](LinkAnswer answer) {
    if (!answer.ok()) return ready(make_error(ErrorCode::kUnavailable, "lockroom did not initialize: " + answer.error->message));
    self->notify("initialized", json::object());
    ready({});
  });
  return link;
}

void LockroomLink::call(std::string_view method, const json& params, std::chrono::milliseconds timeout,
                        std::function<void(LinkAnswer)> done) {
  client_.dispatcher().call(method, params, timeout, [done = std::move(done)](rpc::CallOutcome outcome) {
    done(LinkAnswer{std::move(outcome.result), std::move(outcome.error)});
  });
}

void LockroomLink::shutdown(std::function<void()> done) {
  if (shutting_down_) return;
  shutting_down_ = true;
  core_.manager.shutdown([this, done = std::move(done)]() mutable {
    client_.close([this, done = std::move(done)]() mutable { session_.close("", std::move(done)); });
  });
}

}  // namespace lockroom::acp
