// EditorRequests: the editor's side of the review methods for the workspace benchmark, without
// the pipes: requests as JSON-RPC text into the server's own dispatcher, with changes/* bound as
// `lockroom serve` binds them; ask() runs the driver's loop until the serialized answer is out.
#pragma once

#include <optional>
#include <string>

#include "bench/workspace/sandbox_driver.h"
#include "server/api/workspace_methods.h"
#include "server/rpc/dispatcher.h"
#include "server/rpc/uv_scheduler.h"

namespace lockroom::bench {

class EditorRequests {
 public:
  explicit EditorRequests(Driver& b)
      : b_(b), scheduler_(&b.loop), dispatcher_([this](std::string message) { answer_ = std::move(message); }, scheduler_) {
    api::bind_changes_methods(dispatcher_, *b.manager);
  }
  ~EditorRequests() { scheduler_.cancel_all(); }
  protocol::json ask(const std::string& method, const protocol::json& params) {
    answer_.reset();
    dispatcher_.handle_message(protocol::json{{"jsonrpc", "2.0"}, {"id", next_id_++}, {"method", method}, {"params", params}}.dump());
    b_.run_until([&] { return answer_.has_value(); });
    last_answer_bytes = answer_->size();
    return protocol::json::parse(*answer_);
  }
  std::size_t last_answer_bytes = 0;

 private:
  Driver& b_;
  rpc::UvScheduler scheduler_;
  rpc::Dispatcher dispatcher_;
  std::optional<std::string> answer_;
  int next_id_ = 1;
};

}  // namespace lockroom::bench
