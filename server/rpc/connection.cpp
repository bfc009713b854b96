// Connection; see connection.h.
#include "server/rpc/connection.h"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace lockroom::rpc {

Connection::Connection(uv_loop_t* loop, ConnectionOptions options)
    : loop_(loop),
      options_(options),
      scheduler_(loop),
      transport_(loop, options.in_fd, options.out_fd),
      framing_(make_framing(options.framing, options.max_message_bytes)),
      dispatcher_([this](std::string message) { transport_.write(framing_->encode(message)); }, scheduler_) {}

Connection::~Connection() {
  scheduler_.cancel_all();
  if (mirror_) std::fclose(mirror_);
}

Result<void> Connection::start(std::function<void()> on_gone) {
  on_gone_ = std::move(on_gone);
  if (!options_.input_mirror.empty() && !mirror_) {
    mirror_ = std::fopen(options_.input_mirror.c_str(), "wb");
    if (!mirror_)
      return make_error(ErrorCode::kUnavailable, "cannot write the input mirror " + options_.input_mirror + ": " + std::strerror(errno));
    spdlog::info("copying the raw input to {}", options_.input_mirror);
  }
  return transport_.start(StdioTransport::Callbacks{
      [this](std::string_view bytes) { on_bytes(bytes); },
      [this] { editor_gone("end of input: the editor closed the connection"); },
      [this](const std::string& problem) { editor_gone(problem); },
  });
}

void Connection::on_bytes(std::string_view bytes) {
  if (mirror_) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), mirror_) != bytes.size() || std::fflush(mirror_) != 0) {
      spdlog::warn("the input mirror {} stopped: {}", options_.input_mirror, std::strerror(errno));
      std::fclose(mirror_);
      mirror_ = nullptr;
    }
  }
  events_.clear();
  framing_->feed(bytes, events_);
  for (FrameEvent& event : events_) {
    if (gone_) return;
    if (event.kind == FrameEvent::Kind::kMessage) {
      dispatcher_.handle_message(event.text);
    } else {
      dispatcher_.handle_framing_error(event.text);
    }
  }
}

void Connection::editor_gone(const std::string& why) {
  if (gone_) return;
  gone_ = true;
  spdlog::info("{}", why);
  if (framing_->mid_message()) spdlog::warn("input ended in the middle of a message");
  if (on_gone_) on_gone_();
}

void Connection::close(std::function<void()> done) {
  gone_ = true;
  dispatcher_.fail_pending_calls("the server is shutting down");
  dispatcher_.abandon_requests("the server is shutting down");
  scheduler_.cancel_all();
  transport_.close(std::move(done));
}

void Connection::log_message(MessageType type, const std::string& message) {
  notify("window/logMessage", json{{"type", static_cast<int>(type)}, {"message", message}});
}

}  // namespace lockroom::rpc
