// A guest connection as the egress engine's ClientStream; see guest_connection_stream.h.
#include "server/core/guest_connection_stream.h"

namespace lockroom::core {

namespace {

// What waits is kept in pieces no bigger than this, so each fits the channel's stream queue.
constexpr std::size_t kPiece = 64 * 1024;

// A connection whose stream the engine dropped after closing its side: it sends what is still
// queued and the half-close, then waits for the guest program to close, and deletes itself.
class Linger {
 public:
  static void start(std::unique_ptr<channel::GuestConnection> connection, std::deque<std::string> pending, bool close_sent,
                    bool guest_ended) {
    auto* self = new Linger(std::move(connection), std::move(pending), guest_ended);
    self->closed_ = close_sent;
    self->step();
  }

 private:
  Linger(std::unique_ptr<channel::GuestConnection> connection, std::deque<std::string> pending, bool guest_ended)
      : connection_(std::move(connection)), pending_(std::move(pending)), guest_ended_(guest_ended) {
    channel::GuestConnectionCallbacks cb;
    cb.on_data = [](std::string_view) {};  // nobody reads any more
    cb.on_end = [this] {
      guest_ended_ = true;
      if (closed_) finish();
    };
    cb.on_reset = [this](std::uint32_t, const std::string&) { finish(); };
    cb.on_writable = [this] { step(); };
    connection_->set_callbacks(std::move(cb));
    connection_->pause_reading(false);
  }
  void step() {
    while (!pending_.empty()) {
      auto sent = connection_->write(pending_.front());
      if (!sent) {
        if (sent.error().code == ErrorCode::kLimitExceeded) return;
        return finish();
      }
      pending_.pop_front();
    }
    if (!closed_) {
      closed_ = true;
      connection_->close_write();
    }
    if (guest_ended_) finish();
  }
  void finish() { delete this; }

  std::unique_ptr<channel::GuestConnection> connection_;
  std::deque<std::string> pending_;
  bool guest_ended_;
  bool closed_ = false;
};

}  // namespace

GuestConnectionStream::GuestConnectionStream(std::unique_ptr<channel::GuestConnection> connection)
    : connection_(std::move(connection)) {
  connection_->pause_reading(true);
  auto alive = alive_;
  channel::GuestConnectionCallbacks cb;
  cb.on_data = [this, alive](std::string_view bytes) {
    if (*alive && callbacks_.on_data) callbacks_.on_data(bytes);
  };
  cb.on_end = [this, alive] {
    if (!*alive) return;
    guest_ended_ = true;
    if (callbacks_.on_end) callbacks_.on_end();
  };
  cb.on_reset = [this, alive](std::uint32_t, const std::string& reason) {
    if (!*alive) return;
    was_reset_ = true;
    if (callbacks_.on_reset) callbacks_.on_reset(reason.empty() ? "the guest program closed the connection" : reason);
  };
  cb.on_writable = [this, alive] {
    if (*alive) flush();
  };
  connection_->set_callbacks(std::move(cb));
}

GuestConnectionStream::~GuestConnectionStream() {
  *alive_ = false;
  // Dropped after a half-close with the guest still reading: let the last bytes go out.
  if (closed_write_ && !was_reset_ && connection_) Linger::start(std::move(connection_), std::move(pending_), !close_after_flush_, guest_ended_);
}

bool GuestConnectionStream::write(std::string_view bytes) {
  if (pending_.empty() && !bytes.empty()) {
    // Nothing waits: the channel frames the caller's bytes itself (no copy here).
    auto sent = connection_->write(bytes);
    if (sent) return true;
    if (sent.error().code != ErrorCode::kLimitExceeded) return true;  // the connection is gone: on_reset follows
  }
  for (std::size_t at = 0; at < bytes.size(); at += kPiece) {
    pending_.emplace_back(bytes.substr(at, kPiece));
    pending_bytes_ += pending_.back().size();
  }
  auto alive = alive_;
  flush();
  return *alive && pending_.empty();
}

void GuestConnectionStream::flush() {
  bool had_pending = !pending_.empty();
  while (!pending_.empty()) {
    auto sent = connection_->write(pending_.front());
    if (!sent) {
      if (sent.error().code == ErrorCode::kLimitExceeded) return;  // wait for credit
      pending_.clear();  // the connection is gone: on_reset follows
      pending_bytes_ = 0;
      return;
    }
    pending_bytes_ -= pending_.front().size();
    pending_.pop_front();
  }
  if (close_after_flush_) {
    close_after_flush_ = false;
    connection_->close_write();
  }
  if (had_pending && callbacks_.on_writable) callbacks_.on_writable();
}

void GuestConnectionStream::close_write() {
  if (closed_write_) return;
  closed_write_ = true;
  if (pending_.empty()) return connection_->close_write();
  close_after_flush_ = true;
}

void GuestConnectionStream::reset(const std::string& reason) {
  was_reset_ = true;
  pending_.clear();
  pending_bytes_ = 0;
  connection_->reset(reason);
}

void GuestConnectionStream::pause_reading(bool paused) { connection_->pause_reading(paused); }

std::function<void(bool, int, std::string)> GuestConnectionStream::socks_verdict() {
  std::weak_ptr<bool> alive = alive_;
  channel::GuestConnection* connection = connection_.get();
  return [alive, connection](bool ok, int socks_code, std::string reason) {
    auto live = alive.lock();
    if (!live || !*live) return;
    if (ok) (void)connection->accept();
    else (void)connection->refuse(reason, static_cast<std::uint8_t>(socks_code));
  };
}

}  // namespace lockroom::core
