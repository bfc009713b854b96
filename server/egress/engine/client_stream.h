// ClientStream: one connection from the guest, as the egress proxy engine sees it.
//
// The engine does not know how guest connections reach the host (the channel multiplexes them
// over virtio-serial; tests use loopback sockets). An adapter implements this interface and
// hands the stream to Proxy::accept_http or Proxy::accept_socks, which own it from then on.
//
// Contract, for adapter writers:
//   - The stream starts paused: nothing is delivered until the engine calls pause_reading(false).
//   - write() always takes the bytes. It returns false when the adapter's buffer toward the
//     guest is now above its mark; the engine then stops producing until on_writable.
//   - close_write() ends the engine's sending side after what was written (a half-close);
//     reset(reason) drops the connection at once.
//   - After on_end (the guest closed its sending side) no more on_data arrives; on_reset means
//     the connection broke and nothing more arrives at all.
//   - Callbacks run on the loop thread. The engine never destroys the stream from inside one of
//     its callbacks; the destructor must stop every callback.
//   - The engine destroys a stream soon after close_write() (a 403 answer, the end of a
//     response): what was written must still reach the guest, then the half-close — the adapter
//     finishes that on its own after destruction. After reset() nothing more needs to arrive.
//   - After write() said false the engine writes at most one more read's worth (about 64 KiB)
//     before on_writable, so an adapter whose transport refuses bytes (flow control) keeps
//     them in a small queue of its own and reports false while that queue is not empty.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace lockroom::egress {

class ClientStream {
 public:
  struct Callbacks {
    std::function<void(std::string_view bytes)> on_data;
    std::function<void()> on_end;
    std::function<void(const std::string& reason)> on_reset;
    std::function<void()> on_writable;
  };

  virtual ~ClientStream() = default;

  void set_callbacks(Callbacks callbacks) { callbacks_ = std::move(callbacks); }
  virtual bool write(std::string_view bytes) = 0;
  virtual void close_write() = 0;
  virtual void reset(const std::string& reason) = 0;
  virtual void pause_reading(bool paused) = 0;
  // Bytes written but not yet passed on toward the guest (for the proxy's buffering statistics).
  virtual std::size_t buffered_bytes() const = 0;

 protected:
  Callbacks callbacks_;
};

}  // namespace lockroom::egress
