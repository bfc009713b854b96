// WorkDoneProgress; see progress.h.
#include "server/rpc/progress.h"

#include <algorithm>

namespace lockroom::rpc {

WorkDoneProgress::WorkDoneProgress(Dispatcher& dispatcher, const json& params) : dispatcher_(dispatcher) {
  if (!params.is_object()) return;
  auto it = params.find("workDoneToken");
  if (it != params.end() && (it->is_string() || it->is_number_integer())) token_ = *it;
}

WorkDoneProgress::~WorkDoneProgress() {
  if (begun_ && !ended_) end();
}

void WorkDoneProgress::send(json value) {
  if (!token_) return;
  dispatcher_.notify("$/progress", json{{"token", *token_}, {"value", std::move(value)}});
}

void WorkDoneProgress::begin(const std::string& title, std::optional<int> percentage, bool cancellable) {
  if (begun_) return;
  begun_ = true;
  json value{{"kind", "begin"}, {"title", title}, {"cancellable", cancellable}};
  if (percentage) value["percentage"] = std::clamp(*percentage, 0, 100);
  send(std::move(value));
}

void WorkDoneProgress::report(const std::string& message, std::optional<int> percentage) {
  if (!begun_ || ended_) return;
  json value{{"kind", "report"}, {"message", message}};
  if (percentage) value["percentage"] = std::clamp(*percentage, 0, 100);
  send(std::move(value));
}

void WorkDoneProgress::end(const std::string& message) {
  if (!begun_ || ended_) return;
  ended_ = true;
  json value{{"kind", "end"}};
  if (!message.empty()) value["message"] = message;
  send(std::move(value));
}

}  // namespace lockroom::rpc
