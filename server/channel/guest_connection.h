// GuestConnection: one TCP connection a program in the guest made to the agent's loopback proxy,
// as the host's egress engine sees it (protocol/channel.md, "Network").
//
// Made by AgentClient when the agent announces a stream with net.connection, and handed to the
// on_connection handler, which owns it from then on. For kind() == kHttp the bytes are the
// client's request as it sent it (the host parses and answers it); for kSocks the agent has done
// the SOCKS handshake and target() names where the client wants to go: answer with accept()
// (then bytes flow) or refuse(). Bytes arriving before set_callbacks() are held (at most one
// stream window). write() queues within flow control; when it refuses (kLimitExceeded), wait for
// on_writable. Destroying the object resets the stream if it is still open.
//
// Loop thread only. Must not outlive the AgentClient that made it (its methods then fail with
// kUnavailable and nothing is sent).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/channel/messages.h"
#include "server/common/result.h"

namespace lockroom::channel {

struct GuestConnectionCallbacks {
  std::function<void(std::string_view bytes)> on_data;
  std::function<void()> on_end;  // the guest program half-closed (EOF): no more data will come
  std::function<void(std::uint32_t code, const std::string& reason)> on_reset;  // aborted, refused, or the channel ended
  std::function<void()> on_writable;  // write() may be called again after it refused bytes
};

// The guest program behind a connection, as the agent reported it (net.connection's client.pid,
// command and started): hostile input, checked for shape only; for showing, never for deciding.
struct GuestClientProcess {
  std::int64_t pid = 0;
  std::string command;
  std::optional<std::int64_t> started;  // its ancestor the agent started (a process.start's pid)
};

class GuestConnection {
 public:
  virtual ~GuestConnection() = default;

  virtual protocol::channel::NetKind kind() const = 0;
  // The SOCKS client's target; nullopt for HTTP (read it from the request).
  virtual const std::optional<protocol::channel::NetTarget>& target() const = 0;
  virtual std::int64_t client_port() const = 0;
  virtual std::optional<GuestClientProcess> client_process() const { return std::nullopt; }
  virtual std::uint32_t stream() const = 0;

  virtual void set_callbacks(GuestConnectionCallbacks callbacks) = 0;
  virtual Result<void> write(std::string_view bytes) = 0;
  // While paused, the guest program is held back by flow control (its TCP window fills).
  virtual void pause_reading(bool paused) = 0;
  // Half-close towards the guest program (it reads EOF once the queued bytes are written).
  virtual void close_write() = 0;
  // Aborts the connection both ways; the guest program sees a reset.
  virtual void reset(const std::string& reason) = 0;

  // SOCKS only (kWrongState otherwise, or when the verdict was already given).
  virtual Result<void> accept() = 0;
  // `socks_code` is the reply the program gets (protocol::channel::socks_reply, 0x01..0x08).
  virtual Result<void> refuse(const std::string& reason, std::uint8_t socks_code) = 0;
};

}  // namespace lockroom::channel
