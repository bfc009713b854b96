// save_snapshot / restore_readiness; see snapshot.h.
#include "server/vm/snapshot.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "server/common/uv_handle.h"
#include "server/vm/image/initramfs.h"

namespace lockroom::vm {

namespace fs = std::filesystem;
using ms = std::chrono::milliseconds;
using json = nlohmann::json;

namespace {

constexpr ms kQmpTimeout{5000};
constexpr std::uint64_t kPollMs = 5;

const json kIgnoreShared = {{"capabilities", json::array({{{"capability", "x-ignore-shared"}, {"state", true}}})}};

// Polls `command` every few ms until `check` says done (true) or fails, or the deadline passes.
class Poller : public std::enable_shared_from_this<Poller> {
 public:
  using Check = std::function<Result<bool>(const json& reply)>;
  Poller(Vm& vm, std::string command, Check check, ms timeout, std::function<void(Result<void>)> done)
      : vm_(vm), command_(std::move(command)), check_(std::move(check)), done_(std::move(done)),
        deadline_(uv_now(vm.loop()) + static_cast<std::uint64_t>(timeout.count())), lifetime_(vm.lifetime()) {}
  ~Poller() { close_handle(timer_); }

  void start() {
    timer_ = new_handle<uv_timer_t>(this);
    uv_timer_init(vm_.loop(), timer_);
    keep_ = shared_from_this();
    ask();
  }

 private:
  void ask() {
    auto vm_alive = lifetime_.lock();
    if (!vm_alive || !*vm_alive) return finish(make_error(ErrorCode::kCancelled, "the VM went away"));
    std::weak_ptr<Poller> weak = shared_from_this();
    vm_.qmp().execute(command_, kQmpTimeout, [weak](Result<json> reply) {
      auto self = weak.lock();
      if (!self) return;
      if (!reply) return self->finish(reply.error());
      auto verdict = self->check_(*reply);
      if (!verdict) return self->finish(verdict.error());
      if (*verdict) return self->finish({});
      if (uv_now(self->vm_.loop()) >= self->deadline_)
        return self->finish(make_error(ErrorCode::kLimitExceeded, self->command_ + " did not reach the expected state in time"));
      uv_timer_start(self->timer_, [](uv_timer_t* t) {
        if (auto* p = static_cast<Poller*>(t->data)) p->ask();
      }, kPollMs, 0);
    });
  }
  void finish(Result<void> r) {
    auto done = std::move(done_);
    auto keep = std::move(keep_);  // we may be freed when this function returns
    if (done) done(std::move(r));
  }

  Vm& vm_;
  std::string command_;
  Check check_;
  std::function<void(Result<void>)> done_;
  std::uint64_t deadline_;
  std::weak_ptr<bool> lifetime_;
  uv_timer_t* timer_ = nullptr;
  std::shared_ptr<Poller> keep_;
};

void poll(Vm& vm, std::string command, Poller::Check check, ms timeout, std::function<void(Result<void>)> done) {
  std::make_shared<Poller>(vm, std::move(command), std::move(check), timeout, std::move(done))->start();
}

// Accepts QEMU's outgoing migration connection and copies it into a file.
class MigrationSink {
 public:
  MigrationSink(uv_loop_t* loop, fs::path socket, fs::path file) : loop_(loop), socket_(std::move(socket)), file_(std::move(file)) {}
  ~MigrationSink() {
    close_handle(client_);
    close_handle(server_);
    if (fd_ >= 0) ::close(fd_);
  }
  Result<void> listen() {
    fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) return make_error(ErrorCode::kUnavailable, "cannot create " + file_.string() + ": " + std::strerror(errno));
    server_ = new_handle<uv_pipe_t>(this);
    uv_pipe_init(loop_, server_, 0);
    if (int rc = uv_pipe_bind(server_, socket_.c_str()); rc < 0)
      return make_error(ErrorCode::kUnavailable, "cannot listen on " + socket_.string() + ": " + uv_strerror(rc));
    uv_listen(reinterpret_cast<uv_stream_t*>(server_), 1, [](uv_stream_t* s, int status) {
      auto* self = static_cast<MigrationSink*>(s->data);
      if (!self || status < 0 || self->client_) return;
      self->client_ = new_handle<uv_pipe_t>(self);
      uv_pipe_init(self->loop_, self->client_, 0);
      uv_accept(s, reinterpret_cast<uv_stream_t*>(self->client_));
      uv_read_start(reinterpret_cast<uv_stream_t*>(self->client_),
                    [](uv_handle_t*, std::size_t, uv_buf_t* b) { b->base = new char[65536]; b->len = 65536; },
                    [](uv_stream_t* c, ssize_t n, const uv_buf_t* b) {
                      std::unique_ptr<char[]> owned(b->base);
                      auto* self = static_cast<MigrationSink*>(c->data);
                      if (!self || n == 0) return;
                      if (n < 0) {
                        self->eof_ = true;
                        return close_handle(self->client_);
                      }
                      // Small (device state only): a plain write is fine on the loop.
                      if (::write(self->fd_, b->base, static_cast<std::size_t>(n)) != n) self->write_failed_ = true;
                      self->bytes_ += static_cast<std::uint64_t>(n);
                    });
    });
    return {};
  }
  bool eof() const { return eof_; }
  bool write_failed() const { return write_failed_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  uv_loop_t* loop_;
  fs::path socket_, file_;
  uv_pipe_t* server_ = nullptr;
  uv_pipe_t* client_ = nullptr;
  int fd_ = -1;
  bool eof_ = false;
  bool write_failed_ = false;
  std::uint64_t bytes_ = 0;
};

}  // namespace

void save_snapshot(Vm& vm, const fs::path& state_file, ms timeout, std::function<void(Result<SnapshotInfo>)> done) {
  auto started = uv_now(vm.loop());
  auto sink = std::make_shared<MigrationSink>(vm.loop(), vm.state_dir() / "migrate-out.sock", state_file);
  if (auto ok = sink->listen(); !ok) return done(ok.error());
  auto fail = [done](const Error& e) { done(make_error(e.code, "cannot snapshot the template: " + e.message)); };
  Vm* v = &vm;
  vm.qmp().execute("migrate-set-capabilities", kIgnoreShared, kQmpTimeout, [=](Result<json> r) {
    if (!r) return fail(r.error());
    v->qmp().execute("stop", kQmpTimeout, [=](Result<json> r) {
      if (!r) return fail(r.error());
      v->qmp().execute("migrate", {{"uri", "unix:" + (v->state_dir() / "migrate-out.sock").string()}}, kQmpTimeout, [=](Result<json> r) {
        if (!r) return fail(r.error());
        auto check = [sink](const json& reply) -> Result<bool> {
          std::string status = reply.value("status", "");
          if (status == "failed" || status == "cancelled")
            return make_error(ErrorCode::kUnavailable, "migration " + status + ": " + reply.value("error-desc", std::string("no reason given")));
          if (sink->write_failed()) return make_error(ErrorCode::kUnavailable, "cannot write the state file (disk full?)");
          return status == "completed" && sink->eof();
        };
        poll(*v, "query-migrate", check, timeout, [=](Result<void> r) {
          if (!r) return fail(r.error());
          done(SnapshotInfo{sink->bytes(), ms(uv_now(v->loop()) - started)});
        });
      });
    });
  });
}

ReadinessCheck restore_readiness(fs::path state_file, ReadinessCheck then) {
  return [state_file, then](Vm& vm, std::function<void(Result<void>)> done) {
    auto state = image::read_host_file(state_file);
    if (!state) return done(state.error());
    auto bytes = std::make_shared<std::string>(std::move(*state));
    auto fail = [done](const Error& e) { done(make_error(e.code, "cannot restore the guest: " + e.message)); };
    fs::path sock = vm.state_dir() / "migrate-in.sock";
    Vm* v = &vm;
    v->qmp().execute("migrate-set-capabilities", kIgnoreShared, kQmpTimeout, [=](Result<json> r) {
      if (!r) return fail(r.error());
      v->qmp().execute("migrate-incoming", {{"uri", "unix:" + sock.string()}}, kQmpTimeout, [=](Result<json> r) {
        if (!r) return fail(r.error());
        // QEMU listens now: connect, write the state, close.
        auto* pipe = new_handle<uv_pipe_t>(nullptr);
        uv_pipe_init(v->loop(), pipe, 0);
        struct Ctx {
          std::shared_ptr<std::string> bytes;
          std::function<void(Result<void>)> next;
          uv_write_t write;
        };
        auto* ctx = new Ctx{bytes, nullptr, {}};
        ctx->next = [=](Result<void> wrote) {
          if (!wrote) return fail(wrote.error());
          auto check = [](const json& reply) -> Result<bool> {
            std::string status = reply.value("status", "");
            if (status == "inmigrate") return false;
            if (status == "paused" || status == "postmigrate" || status == "prelaunch") return true;
            return make_error(ErrorCode::kUnavailable, "QEMU is \"" + status + "\" after the incoming migration, not paused");
          };
          poll(*v, "query-status", check, ms(10000), [=](Result<void> r) {
            if (!r) return fail(r.error());
            v->qmp().execute("cont", kQmpTimeout, [=](Result<json> r) {
              if (!r) return fail(r.error());
              if (then) return then(*v, done);
              done({});
            });
          });
        };
        pipe->data = ctx;
        auto* req = new uv_connect_t;
        uv_pipe_connect(req, pipe, sock.c_str(), [](uv_connect_t* req, int status) {
          auto* pipe = reinterpret_cast<uv_pipe_t*>(req->handle);
          delete req;
          auto* ctx = static_cast<Ctx*>(pipe->data);
          if (status < 0) {
            auto next = std::move(ctx->next);
            delete ctx;
            close_handle(pipe);
            return next(make_error(ErrorCode::kUnavailable, std::string("cannot connect to QEMU's incoming migration socket: ") + uv_strerror(status)));
          }
          uv_buf_t buf = uv_buf_init(ctx->bytes->data(), static_cast<unsigned>(ctx->bytes->size()));
          ctx->write.data = pipe;
          uv_write(&ctx->write, reinterpret_cast<uv_stream_t*>(pipe), &buf, 1, [](uv_write_t* w, int status) {
            auto* pipe = static_cast<uv_pipe_t*>(w->data);
            auto* ctx = static_cast<Ctx*>(pipe->data);
            auto next = std::move(ctx->next);
            delete ctx;
            close_handle(pipe);
            if (status < 0) return next(make_error(ErrorCode::kUnavailable, std::string("writing the state to QEMU failed: ") + uv_strerror(status)));
            next({});
          });
        });
      });
    });
  };
}

}  // namespace lockroom::vm
