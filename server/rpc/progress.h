// WorkDoneProgress: `$/progress` reports for one long request, driven by the client's token.
//
// A request whose params carry `workDoneToken` gets begin / report / end notifications under
// that token; without a token every call is a no-op, so handlers use it unconditionally.
// A progress that was begun and not ended is ended when destroyed. Loop thread only.
#pragma once

#include <optional>
#include <string>

#include "server/rpc/connection.h"

namespace lockroom::rpc {

class WorkDoneProgress {
 public:
  // Reads `workDoneToken` (an integer or a string) from the request's params; notifications go
  // out through `dispatcher`.
  WorkDoneProgress(Dispatcher& dispatcher, const json& params);
  WorkDoneProgress(Connection& connection, const json& params) : WorkDoneProgress(connection.dispatcher(), params) {}
  ~WorkDoneProgress();
  WorkDoneProgress(const WorkDoneProgress&) = delete;
  WorkDoneProgress& operator=(const WorkDoneProgress&) = delete;

  bool active() const { return token_.has_value(); }
  // `cancellable` must tell the truth: true only when $/cancelRequest stops the work or undoes
  // its effect (the client then shows a cancel button that does something).
  void begin(const std::string& title, std::optional<int> percentage = std::nullopt, bool cancellable = false);
  void report(const std::string& message, std::optional<int> percentage = std::nullopt);
  void end(const std::string& message = "");

 private:
  void send(json value);
  Dispatcher& dispatcher_;
  std::optional<json> token_;
  bool begun_ = false;
  bool ended_ = false;
};

}  // namespace lockroom::rpc
