// AgentClient's network part: net.enable, net.trust, and the GuestConnections of the agent's
// loopback proxies (protocol/channel.md, "Network"); see agent_client.h and guest_connection.h.
//
// A connection is a stream the agent opened, then announced with net.connection. The announcement
// claims the stream (paused, so nothing is delivered before the owner has set its callbacks);
// a stream the agent never opened or announced twice fails the channel: the guest lied.
#include "server/channel/agent_client.h"

#include <spdlog/spdlog.h>

#include <unordered_map>

#include "server/channel/agent_client_impl.h"

namespace lockroom::channel {

namespace reset_code = wire::reset_code;

struct AgentClient::Net {
  explicit Net(GuestChannel& c) : channel(c) {}
  ~Net();
  GuestChannel& channel;
  std::chrono::milliseconds timeout{10000};
  std::function<void(std::unique_ptr<GuestConnection>)> handler;
  std::size_t max_connections = 256;
  bool enabled = false;
  std::uint32_t last_announced = 0;  // the agent opens and announces in increasing order
  std::unordered_map<std::uint32_t, AgentClient::Connection*> live;  // handed out and still open
};

class AgentClient::Connection final : public GuestConnection {
 public:
  Connection(const std::shared_ptr<Net>& net, wire::NetConnection note) : net_(net), note_(std::move(note)) {}
  ~Connection() override;

  // Claims the announced stream, held back until set_callbacks(). An error means the agent lied.
  Result<void> claim();

  wire::NetKind kind() const override { return note_.kind; }
  const std::optional<wire::NetTarget>& target() const override { return note_.target; }
  std::int64_t client_port() const override { return note_.client_port; }
  std::optional<GuestClientProcess> client_process() const override {
    if (!note_.client_pid) return std::nullopt;
    return GuestClientProcess{*note_.client_pid, note_.client_command, note_.client_started};
  }
  std::uint32_t stream() const override { return note_.stream; }

  void set_callbacks(GuestConnectionCallbacks callbacks) override;
  Result<void> write(std::string_view bytes) override;
  void pause_reading(bool paused) override;
  void close_write() override;
  void reset(const std::string& reason) override;
  Result<void> accept() override;
  Result<void> refuse(const std::string& reason, std::uint8_t socks_code) override;

  // The client is gone: the stream's handlers were detached; nothing may be sent any more.
  void orphan() { orphaned_ = true; }

 private:
  Net* net() const { return orphaned_ ? nullptr : net_.lock().get(); }
  Error gone() const { return make_error(ErrorCode::kUnavailable, "the connection on stream " + std::to_string(note_.stream) + " has ended"); }
  void ended();  // the stream is gone (reset, or closed both ways): it no longer counts
  Result<void> verdict_allowed() const;

  std::weak_ptr<Net> net_;
  wire::NetConnection note_;
  GuestConnectionCallbacks callbacks_;
  bool callbacks_set_ = false;
  bool paused_ = false;
  bool open_ = true;          // neither reset nor closed both ways
  bool guest_ended_ = false;  // the agent half-closed (the program's EOF)
  bool write_closed_ = false;
  bool verdict_ = false;
  bool orphaned_ = false;
};

AgentClient::Net::~Net() {
  for (auto& [id, connection] : live) {
    channel.detach(id);
    connection->orphan();
  }
}

// --- one connection

Result<void> AgentClient::Connection::claim() {
  Net* n = net();
  std::uint32_t id = note_.stream;
  StreamHandlers h;
  h.on_data = [this](std::string_view bytes) {
    if (callbacks_.on_data) callbacks_.on_data(bytes);
  };
  h.on_end = [this] {
    guest_ended_ = true;
    auto on_end = callbacks_.on_end;
    if (write_closed_) ended();
    if (on_end) on_end();
  };
  h.on_reset = [this](std::uint32_t code, const std::string& reason) {
    ended();
    if (auto on_reset = callbacks_.on_reset) on_reset(code, reason);
  };
  h.on_writable = [this] {
    if (auto on_writable = callbacks_.on_writable) on_writable();
  };
  n->channel.pause(id, true);
  return n->channel.attach(id, std::move(h));
}

AgentClient::Connection::~Connection() {
  Net* n = net();
  if (!n) return;
  if (open_) {
    n->live.erase(note_.stream);
    n->channel.reset_stream(note_.stream, reset_code::kCancelled, "the host let go of the connection");
  } else {
    n->channel.detach(note_.stream);
  }
}

void AgentClient::Connection::ended() {
  if (!open_) return;
  open_ = false;
  if (Net* n = net()) n->live.erase(note_.stream);
}

void AgentClient::Connection::set_callbacks(GuestConnectionCallbacks callbacks) {
  callbacks_ = std::move(callbacks);
  callbacks_set_ = true;
  if (Net* n = net(); n && open_) n->channel.pause(note_.stream, paused_);  // delivers what arrived meanwhile
}

void AgentClient::Connection::pause_reading(bool paused) {
  paused_ = paused;
  if (Net* n = net(); n && open_) n->channel.pause(note_.stream, paused_ || !callbacks_set_);
}

Result<void> AgentClient::Connection::write(std::string_view bytes) {
  Net* n = net();
  if (!n || !open_) return gone();
  if (note_.kind == wire::NetKind::kSocks && !verdict_)
    return make_error(ErrorCode::kWrongState, "accept() the SOCKS connection on stream " + std::to_string(note_.stream) + " before writing to it");
  if (write_closed_) return make_error(ErrorCode::kWrongState, "the connection on stream " + std::to_string(note_.stream) + " is closed for writing");
  return n->channel.write(note_.stream, bytes);
}

void AgentClient::Connection::close_write() {
  Net* n = net();
  if (!n || !open_ || write_closed_) return;
  write_closed_ = true;
  n->channel.close_stream(note_.stream);
  if (guest_ended_) ended();
}

void AgentClient::Connection::reset(const std::string& reason) {
  Net* n = net();
  if (!n || !open_) return;
  ended();
  n->channel.reset_stream(note_.stream, reset_code::kCancelled, reason.substr(0, wire::kMaxResetReason));
}

Result<void> AgentClient::Connection::verdict_allowed() const {
  if (note_.kind != wire::NetKind::kSocks)
    return make_error(ErrorCode::kWrongState, "the connection on stream " + std::to_string(note_.stream) + " is HTTP: answer the client with HTTP instead");
  if (verdict_) return make_error(ErrorCode::kWrongState, "the SOCKS connection on stream " + std::to_string(note_.stream) + " already has its verdict");
  if (!net() || !open_) return gone();
  return {};
}

Result<void> AgentClient::Connection::accept() {
  if (auto allowed = verdict_allowed(); !allowed) return allowed;
  verdict_ = true;
  Net* n = net();
  GuestChannel* channel = &n->channel;
  std::uint32_t id = note_.stream;
  // The agent answers {} or "not found" (the program left first; its RESET is on the way).
  n->channel.call(wire::method::kNetAccept, wire::to_json(wire::NetAcceptParams{id}), n->timeout, [channel, id](rpc::CallOutcome outcome) {
    if (!outcome.error && !parse_empty(outcome.result)) channel->fail("malformed reply to net.accept for stream " + std::to_string(id));
  });
  return {};
}

Result<void> AgentClient::Connection::refuse(const std::string& reason, std::uint8_t socks_code) {
  if (auto allowed = verdict_allowed(); !allowed) return allowed;
  if (socks_code < wire::socks_reply::kGeneralFailure || socks_code > wire::socks_reply::kAddressTypeNotSupported)
    return make_error(ErrorCode::kInvalidInput, "SOCKS reply code " + std::to_string(socks_code) + " is not a refusal (use 1..8)");
  verdict_ = true;
  Net* n = net();
  wire::NetRefuseParams params{note_.stream, reason.substr(0, wire::kMaxRefuseReason), socks_code};
  GuestChannel* channel = &n->channel;
  std::uint32_t id = note_.stream;
  n->channel.call(wire::method::kNetRefuse, wire::to_json(params), n->timeout, [channel, id](rpc::CallOutcome outcome) {
    if (!outcome.error && !parse_empty(outcome.result)) channel->fail("malformed reply to net.refuse for stream " + std::to_string(id));
  });
  // The agent answers the program and resets the stream itself; this RESET crosses it.
  ended();
  n->channel.reset_stream(id, reset_code::kRefused, params.reason);
  return {};
}

// --- the client's side

void AgentClient::enable_network(const wire::NetEnableParams& params, Done<wire::NetEnableResult> done) {
  if (!net_) net_ = std::make_shared<Net>(channel_);
  net_->timeout = timeouts_.control;
  if (!net_->enabled) {
    net_->enabled = true;
    std::weak_ptr<Net> net = net_;
    channel_.on_notification(wire::method::kNetConnection, [this, net](const json& p) -> Result<void> {
      if (net.expired()) return {};
      return on_net_connection(p);
    });
  }
  request<wire::NetEnableResult>(wire::method::kNetEnable, wire::to_json(params), timeouts_.control, wire::parse_net_enable_result, std::move(done));
}

void AgentClient::on_connection(std::function<void(std::unique_ptr<GuestConnection>)> handler) {
  if (!net_) net_ = std::make_shared<Net>(channel_);
  net_->handler = std::move(handler);
}

void AgentClient::set_max_connections(std::size_t max) {
  if (!net_) net_ = std::make_shared<Net>(channel_);
  net_->max_connections = max;
}

std::size_t AgentClient::open_connections() const { return net_ ? net_->live.size() : 0; }

void AgentClient::trust_certificate(const std::string& pem, Done<wire::NetTrustResult> done) {
  request<wire::NetTrustResult>(wire::method::kNetTrust, wire::to_json(wire::NetTrustParams{pem}), timeouts_.control, wire::parse_net_trust_result,
                                std::move(done));
}

Result<void> AgentClient::on_net_connection(const json& params) {
  auto note = wire::parse_net_connection(params);
  if (!note) return note.error();
  std::uint32_t id = note->stream;
  if (id <= net_->last_announced)
    return make_error(ErrorCode::kInvalidInput, "stream " + std::to_string(id) + " was announced after stream " +
                                                    std::to_string(net_->last_announced) + " (announced twice, or out of order)");
  net_->last_announced = id;
  auto connection = std::make_unique<Connection>(net_, std::move(*note));
  if (auto claimed = connection->claim(); !claimed) {  // never opened, or announced twice: the channel fails
    connection->orphan();
    return claimed.error();
  }
  if (net_->live.size() >= net_->max_connections) {
    connection->orphan();
    channel_.reset_stream(id, reset_code::kTooMuch, "the host allows " + std::to_string(net_->max_connections) + " connections at once");
    spdlog::warn("guest connection on stream {} refused: {} are open, the limit", id, net_->live.size());
    return {};
  }
  if (!net_->handler) {
    connection->orphan();
    channel_.reset_stream(id, reset_code::kRefused, "the host takes no connections");
    return {};
  }
  net_->live[id] = connection.get();
  net_->handler(std::move(connection));
  return {};
}

}  // namespace lockroom::channel
