// GuestConnectionStream: a guest program's connection (channel::GuestConnection, one stream on
// the guest channel) as the egress engine's ClientStream.
//
// It starts paused, as the engine expects. write() always takes the bytes: when nothing waits
// they go straight to the channel (which frames them from the caller's buffer, see
// GuestChannel::write); what the channel's queue does not accept waits here (in pieces of at
// most 64 KiB) and goes out when the guest grants credit; write() returns false while anything
// waits, and on_writable fires when it is all gone. A half-close asked for while bytes wait is sent after them. The engine may drop the
// stream right after close_write() (after a 403, at the end of a response): the connection then
// lingers on its own until its last bytes and the half-close are out and the guest program has
// closed too (or the connection breaks), so answers are never cut off. For SOCKS,
// socks_verdict() gives the engine's verdict to the guest program. Loop thread only.
#pragma once

#include <deque>
#include <memory>
#include <string>

#include "server/channel/guest_connection.h"
#include "server/egress/engine/client_stream.h"

namespace lockroom::core {

class GuestConnectionStream final : public egress::ClientStream {
 public:
  explicit GuestConnectionStream(std::unique_ptr<channel::GuestConnection> connection);
  ~GuestConnectionStream() override;

  bool write(std::string_view bytes) override;
  void close_write() override;
  void reset(const std::string& reason) override;
  void pause_reading(bool paused) override;
  std::size_t buffered_bytes() const override { return pending_bytes_; }

  // The SOCKS verdict for the guest program (accept, or refuse with a SOCKS reply code). Safe
  // to call after the stream is gone (it then does nothing): returns a callable for the engine.
  std::function<void(bool ok, int socks_code, std::string reason)> socks_verdict();

 private:
  void flush();

  std::unique_ptr<channel::GuestConnection> connection_;
  std::deque<std::string> pending_;
  std::size_t pending_bytes_ = 0;
  bool close_after_flush_ = false;
  bool closed_write_ = false;  // close_write() was asked for
  bool guest_ended_ = false;   // the guest program half-closed
  bool was_reset_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::core
