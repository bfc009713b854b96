// The scripted lying agent; see lying_agent.h.
#include "tests/fakes/lying_agent.h"

namespace lockroom::testing {

namespace wire = protocol::channel;
using protocol::json;

LyingAgent::LyingAgent(uv_loop_t* loop, int fd) : socket_(loop) {
  auto started = socket_.start(fd, lockroom::channel::SocketStream::Callbacks{
      [this](std::string_view bytes) { on_bytes(bytes); },
      [this](const std::string&) { host_closed_ = true; },
  });
  (void)started;
}

LyingAgent::~LyingAgent() = default;

void LyingAgent::on_bytes(std::string_view bytes) {
  auto fed = decoder_.feed(bytes, [this](const wire::Frame& frame) -> Result<void> {
    if (frame.header.kind != wire::Kind::kControl) return {};  // stream traffic from the host is not scripted
    control_.append(frame.payload);
    if (frame.header.flags & wire::kFlagMore) return {};
    std::string text = std::move(control_);
    control_.clear();
    auto message = protocol::classify(text);
    auto* request = std::get_if<protocol::Request>(&message);
    if (!request) return {};
    seen_.push_back(request->method);
    if (request->method == wire::method::kHello && !hello_) {
      wire::HelloResult hello;
      hello.agent_version = "lying-agent";
      hello.pid = 1;
      hello.process_limit = "rlimit";
      hello.settings = wire::Settings{};
      reply(request->id, wire::to_json(hello));
    } else if (request->method == wire::method::kHello) {
      hello_(*this, *request);
    } else if (script_) {
      script_(*this, *request);
    }
    return {};
  });
  (void)fed;  // a host that sends garbage is not what these tests are about
}

void LyingAgent::send_raw(std::string bytes) { socket_.write(std::move(bytes)); }

void LyingAgent::send_frame(wire::Kind kind, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  std::string out;
  wire::append_frame(out, kind, flags, stream, payload);
  send_raw(std::move(out));
}

void LyingAgent::send_control_text(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    std::string_view part = text.substr(0, wire::kMaxFramePayload);
    text.remove_prefix(part.size());
    wire::append_frame(out, wire::Kind::kControl, text.empty() ? 0 : wire::kFlagMore, 0, part);
  }
  send_raw(std::move(out));
}

void LyingAgent::reply(const protocol::Id& id, const json& result) { send_control_text(protocol::encode_result(id, result)); }

void LyingAgent::reply_error(const protocol::Id& id, int code, const std::string& message) {
  send_control_text(protocol::encode_error(id, protocol::RpcError{code, message, nullptr}));
}

void LyingAgent::notify(const std::string& method, const json& params) {
  send_control_text(protocol::encode_notification(method, params));
}

std::uint32_t LyingAgent::open_stream() {
  std::uint32_t id = next_stream_;
  next_stream_ += 2;
  send_frame(wire::Kind::kOpen, 0, id, {});
  return id;
}

void LyingAgent::send_data(std::uint32_t stream, std::string_view bytes) {
  while (!bytes.empty()) {
    std::string_view part = bytes.substr(0, wire::kMaxFramePayload);
    bytes.remove_prefix(part.size());
    send_frame(wire::Kind::kData, 0, stream, part);
  }
}

}  // namespace lockroom::testing
