// InnerAgent; see inner_agent.h.
#include "server/acp/inner_agent.h"

#include <spdlog/spdlog.h>

namespace lockroom::acp {

namespace {
// One line of the agent's stderr is logged at most this long.
constexpr std::size_t kMaxLogLine = 4096;
}  // namespace

InnerAgent::InnerAgent(uv_loop_t* loop, LockroomLink& link, std::string process_id, std::string label)
    : link_(link),
      process_id_(std::move(process_id)),
      label_(std::move(label)),
      scheduler_(loop),
      dispatcher_([this](std::string message) { send(std::move(message)); }, scheduler_) {}

InnerAgent::~InnerAgent() { scheduler_.cancel_all(); }

void InnerAgent::send(std::string message) {
  if (!running_) return;
  json params{{"processId", process_id_}, {"data", framing_.encode(message)}};
  link_.call("process/write", params, std::chrono::seconds(60), [label = label_](LinkAnswer answer) {
    if (!answer.ok()) spdlog::warn("{}: a message to the agent was not delivered: {}", label, answer.error->message);
  });
}

void InnerAgent::output(std::string_view stream, std::string_view bytes) {
  if (stream == "stderr") {
    for (char c : bytes) {
      if (c == '\n') {
        spdlog::info("{}: {}", label_, stderr_line_);
        stderr_line_.clear();
      } else if (stderr_line_.size() < kMaxLogLine) {
        stderr_line_.push_back(c);
      }
    }
    return;
  }
  events_.clear();
  framing_.feed(bytes, events_);
  for (auto& event : events_) {
    if (event.kind == rpc::FrameEvent::Kind::kMessage) dispatcher_.handle_message(event.text);
    else spdlog::warn("{}: the agent wrote something that is not an ACP message: {}", label_, event.text);
  }
}

void InnerAgent::exited(const std::string& why) {
  if (!running_) return;
  running_ = false;
  if (!stderr_line_.empty()) spdlog::info("{}: {}", label_, stderr_line_);
  dispatcher_.fail_pending_calls(why);
  dispatcher_.abandon_requests(why);
}

}  // namespace lockroom::acp
