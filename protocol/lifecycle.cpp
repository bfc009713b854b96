// initialize params and result; see lifecycle.h.
#include "protocol/lifecycle.h"

namespace lockroom::protocol {

InitializeParams read_initialize_params(ParamReader& reader) {
  InitializeParams out;
  if (auto pid = reader.any("processId", false)) {
    if (!pid->is_number_integer()) reader.fail("processId", "must be an integer or null, got " + dump(*pid));
    else out.process_id = pid->get<std::int64_t>();
  }
  if (auto client = reader.object("clientInfo", false)) {
    out.client_name = client->string("name", true).value_or("");
    out.client_version = client->string("version", false).value_or("");
    reader.merge(*client);
  }
  if (auto caps = reader.object("capabilities", false)) {
    if (auto window = caps->object("window", false)) {
      out.work_done_progress = window->boolean("workDoneProgress", false).value_or(false);
      out.show_message_request = window->any("showMessage", false).has_value();
      caps->merge(*window);
    }
    if (auto experimental = caps->object("experimental", false)) {
      if (auto ours = experimental->object("lockroom", false)) {
        out.network_approval = ours->boolean("networkApproval", false).value_or(false);
        experimental->merge(*ours);
      }
      caps->merge(*experimental);
    }
    reader.merge(*caps);
  }
  return out;
}

json initialize_result(const ServerInfo& info) {
  return json{
      {"serverInfo", {{"name", info.name}, {"version", info.version}}},
      {"capabilities",
       {
           // lockroom is not a language server: it advertises no textDocument features, only its
           // own method families under `experimental`, so generic LSP clients stay quiet.
           {"experimental",
            {{"lockroom",
              {{"protocolVersion", 1},
               {"cancellation", true},
               {"workDoneProgress", true},
               {"methods", json::array({"lockroom/echo", "sandbox/create", "sandbox/list", "sandbox/destroy", "sandbox/attach", "process/start",
                                         "process/write", "process/closeStdin", "process/resize", "process/signal", "changes/list", "changes/diff",
                                         "changes/content", "changes/apply", "changes/discard", "workspace/sync", "network/policy"})}}}}},
       }},
  };
}

}  // namespace lockroom::protocol
