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

// Takes `fd`: reads from it and writes to a duplicate.
rpc::ConnectionOptions options_on(int fd) {
  rpc::ConnectionOptions options;
  options.framing = rpc::FramingKind::kContentLength;
  options.in_fd = fd;
  options.out_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  return options;
}

}  // namespace

LockroomLink::LockroomLink(uv_loop_t* loop, rpc::ConnectionOptions client) : loop_(loop), client_(loop, client) {}

LockroomLink::~LockroomLink() = default;

Result<std::unique_ptr<LockroomLink>> LockroomLink::start(uv_loop_t* loop, core::ManagerConfig config, const std::string& version,
                                                          std::function<void(Result<void>)> ready) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(ErrorCode::kUnavailable, std::string("cannot make a socketpair: ") + std::strerror(errno));
  std::unique_ptr<LockroomLink> link(new LockroomLink(loop, options_on(fds[1])));
  link->core_ = std::make_unique<serve::ServerCore>(loop, std::move(config), serve::RouterOptions{});
  link->session_ = std::make_unique<serve::Session>(link->core_->services(protocol::ServerInfo{"lockroom", version}, false), 1,
                                                    options_on(fds[0]), nullptr, "the ACP face");
  if (auto started = link->session_->start([](int) {}); !started) return started.error();
  if (auto inited = link->initialize(version, std::move(ready)); !inited) return inited.error();
  return link;
}

Result<std::unique_ptr<LockroomLink>> LockroomLink::connect(uv_loop_t* loop, const serve::SharedServerTarget& target,
                                                            const std::string& version, std::function<void(Result<void>)> ready) {
  auto connected = serve::connect_shared_server(target);
  if (!connected) return connected.error();
  spdlog::info("lockroom acp: connected to the shared lockroom server (pid {}, log {})", connected->welcome.pid, connected->welcome.log);
  std::unique_ptr<LockroomLink> link(new LockroomLink(loop, options_on(connected->fd)));
  if (auto inited = link->initialize(version, std::move(ready)); !inited) return inited.error();
  return link;
}

Result<void> LockroomLink::initialize(const std::string& version, std::function<void(Result<void>)> ready) {
  if (auto started = client_.start([this] {
        if (shutting_down_) return;
        if (shared())
          spdlog::error("lockroom acp: the shared lockroom server closed the connection (it exited or was stopped; see its log)");
        else
          spdlog::error("lockroom acp: the in-process server closed its end");
      });
      !started)
    return started.error();
  json params = {{"processId", static_cast<int>(::getpid())},
                 {"clientInfo", {{"name", "lockroom-acp"}, {"version", version}}},
                 {"capabilities", {{"experimental", {{"lockroom", {{"networkApproval", true}}}}}}}};
  call("initialize", params, std::chrono::seconds(30), [this, ready = std::move(ready)](LinkAnswer answer) {
    if (!answer.ok()) return ready(make_error(ErrorCode::kUnavailable, "lockroom did not initialize: " + answer.error->message));
    notify("initialized", json::object());
    ready({});
  });
  return {};
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
  if (shared()) return client_.close(std::move(done));
  core_->manager.shutdown([this, done = std::move(done)]() mutable {
    client_.close([this, done = std::move(done)]() mutable { session_->close("", std::move(done)); });
  });
}

}  // namespace lockroom::acp
