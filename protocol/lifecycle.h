// Wire types of the LSP-style lifecycle on the editor face: initialize and its result.
//
// The server core sees ClientInfo / ServerInfo, never JSON; this file converts at the edge.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/jsonrpc.h"
#include "protocol/params.h"

namespace lockroom::protocol {

// What lockroom keeps of the client's `initialize` params.
struct InitializeParams {
  std::optional<std::int64_t> process_id;  // the editor's pid, when it sent one
  std::string client_name;                 // clientInfo.name, or "" when absent
  std::string client_version;
  bool work_done_progress = false;  // capabilities.window.workDoneProgress
  bool show_message_request = false;  // capabilities.window.showMessage
  // capabilities.experimental.lockroom.networkApproval: the client answers network/approve.
  bool network_approval = false;
};

// Reads initialize params; a malformed field is reported through the reader.
InitializeParams read_initialize_params(ParamReader& reader);

struct ServerInfo {
  std::string name;
  std::string version;
};

// The `initialize` result: serverInfo and the capabilities lockroom offers; `methods` are the
// request methods a client may call (the server's dispatcher table, lifecycle and test/* left out).
json initialize_result(const ServerInfo& info, const std::vector<std::string>& methods);

}  // namespace lockroom::protocol
