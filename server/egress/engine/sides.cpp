// ClientSide, UpstreamSide and TlsSide; see sides.h.
#include "server/egress/engine/sides.h"

namespace lockroom::egress {

namespace {
constexpr std::size_t kDeliverChunk = 64u << 10;
}

// --- ClientSide ---------------------------------------------------------------------------------

ClientSide::~ClientSide() { close(); }

void ClientSide::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  if (!stream_ || closed_) return;
  stream_->set_callbacks({
      [this](std::string_view bytes) {
        if (!closed_ && callbacks_.on_data) callbacks_.on_data(bytes);
      },
      [this] {
        if (!closed_ && callbacks_.on_end) callbacks_.on_end();
      },
      [this](const std::string& reason) {
        if (!closed_ && callbacks_.on_error) callbacks_.on_error("the guest's connection was reset: " + reason);
      },
      [this] {
        if (!closed_ && callbacks_.on_writable) callbacks_.on_writable();
      },
  });
  stream_->pause_reading(false);
}

bool ClientSide::write(std::string_view bytes) {
  if (!stream_ || closed_ || write_closed_) return true;
  return stream_->write(bytes);
}

void ClientSide::pause_reading(bool paused) {
  if (stream_ && !closed_) stream_->pause_reading(paused);
}

void ClientSide::close_write() {
  if (!stream_ || closed_ || write_closed_) return;
  write_closed_ = true;
  stream_->close_write();
}

void ClientSide::reset(const std::string& reason) {
  if (!stream_ || closed_) return;
  closed_ = true;
  write_closed_ = true;
  stream_->reset(reason);
}

void ClientSide::close() {
  if (!stream_ || closed_) return;
  close_write();
  closed_ = true;
  stream_->pause_reading(true);
}

// --- UpstreamSide -------------------------------------------------------------------------------

void UpstreamSide::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  if (!connection_) return;
  if (started_) return connection_->resume_reading();
  started_ = true;
  connection_->start({
      [this](std::string_view bytes) {
        if (callbacks_.on_data) callbacks_.on_data(bytes);
      },
      [this] {
        if (callbacks_.on_end) callbacks_.on_end();
      },
      [this](const std::string& why) {
        if (callbacks_.on_error) callbacks_.on_error(why);
      },
      [this] {
        if (!over_mark_) return;
        over_mark_ = false;
        if (callbacks_.on_writable) callbacks_.on_writable();
      },
  });
}

bool UpstreamSide::write(std::string_view bytes) {
  if (!connection_ || bytes.empty()) return !over_mark_;
  connection_->write(std::string(bytes));
  if (connection_ && connection_->queued_bytes() > high_water_) over_mark_ = true;
  return !over_mark_;
}

void UpstreamSide::pause_reading(bool paused) {
  if (!connection_ || !started_) return;
  if (paused)
    connection_->pause_reading();
  else
    connection_->resume_reading();
}

void UpstreamSide::close_write() {
  if (connection_) connection_->shutdown_write();
}

void UpstreamSide::close() {
  if (connection_) connection_->close();
}

// --- TlsSide ------------------------------------------------------------------------------------

TlsSide::TlsSide(std::unique_ptr<tls::TlsStream> tls, std::unique_ptr<Side> inner)
    : tls_(std::move(tls)), inner_(std::move(inner)) {}

void TlsSide::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  if (dead()) return;
  paused_ = false;
  if (started_) return pause_reading(false);
  started_ = true;
  inner_->start({
      [this](std::string_view bytes) { on_ciphertext(bytes); },
      [this] {
        inner_ended_ = true;
        if (!tls_->handshake_done()) return fail("the connection closed during the TLS handshake");
        deliver();
      },
      [this](const std::string& why) { fail(why); },
      [this] {
        inner_full_ = false;
        if (!dead() && callbacks_.on_writable) callbacks_.on_writable();
      },
  });
  flush();  // a client's ClientHello
}

void TlsSide::feed_initial(std::string_view ciphertext) { on_ciphertext(ciphertext); }

void TlsSide::on_ciphertext(std::string_view bytes) {
  if (dead()) return;
  Result<void> fed = tls_->feed_ciphertext(bytes);
  flush();  // handshake answers, or the alert that explains a failure
  if (dead()) return;
  if (!fed) return fail(tls_->error().empty() ? fed.error().message : tls_->error());
  deliver();
}

void TlsSide::deliver() {
  if (dead() || delivering_) return;
  delivering_ = true;
  while (!dead() && !paused_ && tls_->plaintext_available() > 0) {
    std::string plain = tls_->read_plaintext(kDeliverChunk);
    if (callbacks_.on_data) callbacks_.on_data(plain);
  }
  delivering_ = false;
  if (dead()) return;
  if (tls_->state() == tls::TlsStream::State::kFailed) return fail(tls_->error());
  if (paused_) return;
  bool ended = inner_ended_ || tls_->peer_closed();
  if (ended && tls_->plaintext_available() == 0) {
    if (!end_reported_) {
      end_reported_ = true;
      if (callbacks_.on_end) callbacks_.on_end();
    }
    return;
  }
  inner_->pause_reading(!tls_->wants_ciphertext());
}

bool TlsSide::flush() {
  std::string out = tls_->take_ciphertext();
  if (!out.empty() && !inner_->write(out)) inner_full_ = true;
  return !inner_full_;
}

bool TlsSide::write(std::string_view bytes) {
  if (dead()) return true;
  if (Result<void> written = tls_->write_plaintext(bytes); !written) {
    fail(written.error().message);
    return true;
  }
  return flush();
}

void TlsSide::pause_reading(bool paused) {
  if (dead()) return;
  paused_ = paused;
  if (paused) return inner_->pause_reading(true);
  deliver();
}

void TlsSide::close_write() {
  if (dead()) return;
  tls_->close();
  flush();
  inner_->close_write();
}

void TlsSide::close() {
  if (closed_) return;
  closed_ = true;
  inner_->close();
}

std::size_t TlsSide::buffered() const { return inner_->buffered() + tls_->ciphertext_pending(); }

void TlsSide::fail(const std::string& why) {
  if (dead()) return;
  flush();
  failed_ = true;
  if (callbacks_.on_error) callbacks_.on_error(why);
}

}  // namespace lockroom::egress
