// GuestLink; see guest_link.h.
#include "server/core/guest_link.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "server/common/uv_handle.h"

namespace lockroom::core {

namespace {

constexpr std::chrono::milliseconds kRetryEvery{5};

// One non-blocking connect attempt. A unix socket connects at once or fails at once.
Result<int> dial(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof addr.sun_path)
    return make_error(ErrorCode::kInvalidInput, "socket path too long: " + path.string());
  std::memcpy(addr.sun_path, path.c_str(), path.native().size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(ErrorCode::kInternal, std::string("socket: ") + std::strerror(errno));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    close(fd);
    return make_error(ErrorCode::kUnavailable, std::string("connect: ") + std::strerror(err));
  }
  return fd;
}

// Retries dial() on a timer until it works or the deadline passes.
struct Dialer {
  uv_timer_t* timer = nullptr;
  std::filesystem::path path;
  std::chrono::steady_clock::time_point deadline;
  std::function<void(Result<int>)> done;

  void attempt() {
    auto fd = dial(path);
    if (fd.ok() || std::chrono::steady_clock::now() >= deadline) return finish(std::move(fd));
    uv_timer_start(timer, [](uv_timer_t* t) { static_cast<Dialer*>(t->data)->attempt(); },
                   static_cast<std::uint64_t>(kRetryEvery.count()), 0);
  }
  void finish(Result<int> fd) {
    auto callback = std::move(done);
    close_handle(timer);
    delete this;
    if (!fd.ok())
      fd = make_error(ErrorCode::kUnavailable, "the guest's channel socket never accepted a connection (" + fd.error().message + ")");
    callback(std::move(fd));
  }
};

}  // namespace

GuestLink::GuestLink(uv_loop_t* loop, channel::ChannelOptions options)
    : channel_(std::make_unique<channel::GuestChannel>(loop, std::move(options))) {}

GuestLink::~GuestLink() = default;

void GuestLink::connect(uv_loop_t* loop, std::filesystem::path socket, std::chrono::milliseconds deadline,
                        std::function<void(const Error&)> on_failed, Connected done) {
  auto* dialer = new Dialer();
  dialer->timer = new_handle<uv_timer_t>(dialer);
  uv_timer_init(loop, dialer->timer);
  dialer->path = std::move(socket);
  dialer->deadline = std::chrono::steady_clock::now() + deadline;
  dialer->done = [loop, until = dialer->deadline, on_failed = std::move(on_failed), done = std::move(done)](Result<int> fd) mutable {
    if (!fd) return done(fd.error());
    // QEMU accepts the socket before the guest's agent runs: a guest still booting (slow under
    // TCG on a busy host) answers hello late, so hello may take what is left of the deadline.
    channel::ChannelOptions options;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    options.hello_timeout = std::max(options.hello_timeout, left);
    std::unique_ptr<GuestLink> link(new GuestLink(loop, std::move(options)));
    channel::GuestChannel* channel = link->channel_.get();
    // The link travels through the hello callback and comes out in `done`.
    auto pending = std::make_shared<std::unique_ptr<GuestLink>>(std::move(link));
    auto report = std::make_shared<Connected>(std::move(done));
    auto started = channel->start(
        *fd,
        [pending, report](Result<protocol::channel::HelloResult> hello) {
          auto link = std::move(*pending);
          if (!link) return;
          if (!hello) {
            close_and_release(std::move(link));
            return (*report)(hello.error());
          }
          link->agent_ = std::make_unique<channel::AgentClient>(*link->channel_);
          (*report)(std::move(link));
        },
        [on_failed](const Error& error) {
          if (on_failed) on_failed(error);
        });
    if (!started) {
      auto link = std::move(*pending);
      close_and_release(std::move(link));
      (*report)(started.error());
    }
  };
  dialer->attempt();
}

void GuestLink::close(std::function<void()> done) {
  agent_.reset();
  channel_->close(std::move(done));
}

}  // namespace lockroom::core
