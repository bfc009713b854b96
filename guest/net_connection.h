// NetConnection: one TCP connection a guest program made to the agent's loopback proxies, and the
// stream that carries it to the host (protocol/channel.md, "Network").
//
// HTTP: the stream opens and net.connection announces it at once; the bytes go to the host as
// they are. SOCKS: the agent answers the greeting itself, reads the CONNECT request, then opens
// and announces the stream with the target and reads nothing more from the client until the host
// answers net.accept (reply 0x00, then relay) or net.refuse (the host's reply code, then close).
// Relaying: client bytes are read only within the host's credit (a slow host stalls the client's
// TCP window, never the agent's memory); host bytes go to the socket straight from the frame
// when nothing waits before them, the rest is held (at most one window) until the socket takes
// it, and credit goes back as they are written. Client EOF → CLOSE; host CLOSE →
// shutdown(SHUT_WR) once everything is written; RESET either way → the socket is closed with RST.
// Loop thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "guest/connection.h"
#include "guest/errors.h"
#include "guest/net_socks.h"
#include "guest/poll_set.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

class NetConnection final : public StreamOwner {
 public:
  NetConnection(Connection& channel, int fd, protocol::channel::NetKind kind, std::int64_t client_port);
  ~NetConnection() override;
  NetConnection(const NetConnection&) = delete;
  NetConnection& operator=(const NetConnection&) = delete;

  // HTTP: opens and announces the stream (false when the channel refuses a new stream: the
  // connection is then closed). SOCKS: waits for the greeting.
  bool start();
  // The guest program behind the connection (net_peer.h), announced with it; before start().
  void set_client_process(std::int64_t pid, std::string command, std::optional<std::int64_t> started);
  std::uint32_t stream() const { return stream_; }
  bool awaiting_verdict() const { return state_ == State::kVerdict; }
  bool done() const { return state_ == State::kDone; }

  void add_polls(PollSet& set);
  // The host's verdict on a SOCKS connection.
  void accept();
  void refuse(std::uint8_t socks_code, const std::string& reason);
  // The session is gone: the stream is forgotten already; close the socket with RST.
  void abandon();

  void on_stream_data(std::uint32_t stream, std::string_view bytes) override;
  void on_stream_closed(std::uint32_t stream) override;
  void on_stream_reset(std::uint32_t stream, std::uint32_t code, std::string_view reason) override;

 private:
  enum class State { kHandshake, kVerdict, kRelay, kDone };
  bool announce(std::optional<protocol::channel::NetTarget> target);
  void read_handshake();
  void read_client();
  void write_client();
  // Sends what it can of `bytes` to the program's socket now; returns how many it took, or
  // nullopt after fail() (the connection is done).
  std::optional<std::size_t> send_some(std::string_view bytes);
  bool pending_out() const { return out_at_ < out_.size(); }
  bool write_all(const std::string& bytes);
  void fail(std::uint32_t code, const std::string& why);
  void maybe_finish();
  void close_socket(bool abortive);

  Connection& channel_;
  int fd_;
  protocol::channel::NetKind kind_;
  std::int64_t client_port_;
  std::optional<std::int64_t> client_pid_;
  std::string client_command_;
  std::optional<std::int64_t> client_started_;
  State state_;
  SocksHandshake socks_;
  std::uint32_t stream_ = 0;
  std::string early_;         // client bytes that came right behind the SOCKS request
  std::string out_;           // host bytes the socket has not taken yet: out_[out_at_..]
  std::size_t out_at_ = 0;
  bool client_ended_ = false; // the client's EOF was read (and CLOSE sent)
  bool host_ended_ = false;   // the host half-closed
  bool shut_write_ = false;
};

}  // namespace lockroom::agent
