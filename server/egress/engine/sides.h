// Sides: the two ends of everything the proxy relays, behind one small interface.
//
// A Side carries plaintext bytes in and out with backpressure: write() always takes the bytes
// and says false when the side's buffer is above its mark (the producer pauses until
// on_writable); pause_reading() stops on_data. Three kinds:
//   ClientSide    a ClientStream from the guest
//   UpstreamSide  an UpstreamConnection to a server
//   TlsSide       TLS (a TlsStream over memory buffers) run over another Side: the server role
//                 toward the guest when the proxy terminates TLS, the client role toward upstream
// close() stops every callback at once; it is how a session ends its sides (never from a
// destructor while a callback of the same side is running: the session defers destruction).
// Loop thread only; nothing here throws.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/egress/engine/client_stream.h"
#include "server/egress/tls/tls_stream.h"
#include "server/egress/tls/upstream_connection.h"

namespace lockroom::egress {

class Side {
 public:
  struct Callbacks {
    std::function<void(std::string_view bytes)> on_data;
    std::function<void()> on_end;                          // the peer finished sending
    std::function<void(const std::string& why)> on_error;  // broken; nothing more will come
    std::function<void()> on_writable;                     // below the mark again after write() said false
  };

  virtual ~Side() = default;
  // Sets (or replaces) the callbacks and starts delivering unless paused.
  virtual void start(Callbacks callbacks) = 0;
  virtual bool write(std::string_view bytes) = 0;
  virtual void pause_reading(bool paused) = 0;
  virtual void close_write() = 0;
  virtual void close() = 0;
  virtual std::size_t buffered() const = 0;  // bytes taken by write() not yet handed on
};

class ClientSide final : public Side {
 public:
  explicit ClientSide(std::unique_ptr<ClientStream> stream) : stream_(std::move(stream)) {}
  ~ClientSide() override;
  void start(Callbacks callbacks) override;
  bool write(std::string_view bytes) override;
  void pause_reading(bool paused) override;
  void close_write() override;
  void close() override;
  std::size_t buffered() const override { return stream_ ? stream_->buffered_bytes() : 0; }
  // Drops the connection with a reason (for a TLS refusal or a broken tunnel) and closes.
  void reset(const std::string& reason);

 private:
  std::unique_ptr<ClientStream> stream_;
  Callbacks callbacks_;
  bool closed_ = false;
  bool write_closed_ = false;
};

class UpstreamSide final : public Side {
 public:
  UpstreamSide(std::unique_ptr<tls::UpstreamConnection> connection, std::size_t high_water)
      : connection_(std::move(connection)), high_water_(high_water) {}
  ~UpstreamSide() override { close(); }
  void start(Callbacks callbacks) override;
  bool write(std::string_view bytes) override;
  void pause_reading(bool paused) override;
  void close_write() override;
  void close() override;
  std::size_t buffered() const override { return connection_ ? connection_->queued_bytes() : 0; }
  const tls::UpstreamConnection* connection() const { return connection_.get(); }

 private:
  std::unique_ptr<tls::UpstreamConnection> connection_;
  std::size_t high_water_;
  Callbacks callbacks_;
  bool over_mark_ = false;
  bool started_ = false;
};

class TlsSide final : public Side {
 public:
  // Plaintext flows once the handshake is done; before that, write() is held by the TlsStream.
  TlsSide(std::unique_ptr<tls::TlsStream> tls, std::unique_ptr<Side> inner);
  ~TlsSide() override { close(); }
  void start(Callbacks callbacks) override;
  // Ciphertext the peer sent before this side existed (the ClientHello the proxy peeked at).
  void feed_initial(std::string_view ciphertext);
  bool write(std::string_view bytes) override;
  void pause_reading(bool paused) override;
  void close_write() override;
  void close() override;
  std::size_t buffered() const override;
  const tls::TlsStream& tls() const { return *tls_; }
  Side& inner() { return *inner_; }

 private:
  void on_ciphertext(std::string_view bytes);
  bool flush();         // ciphertext out to the inner side; false when the inner side is full
  void deliver();       // plaintext to on_data while not paused
  void fail(const std::string& why);
  bool dead() const { return closed_ || failed_; }

  std::unique_ptr<tls::TlsStream> tls_;
  std::unique_ptr<Side> inner_;
  Callbacks callbacks_;
  bool started_ = false;
  bool paused_ = true;
  bool closed_ = false;
  bool failed_ = false;
  bool inner_full_ = false;
  bool inner_ended_ = false;
  bool end_reported_ = false;
  bool delivering_ = false;
};

}  // namespace lockroom::egress
