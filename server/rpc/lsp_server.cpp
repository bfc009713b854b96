// LspServer; see lsp_server.h.
#include "server/rpc/lsp_server.h"

#include <spdlog/spdlog.h>

namespace lockroom::rpc {

LspServer::LspServer(Connection& connection, protocol::ServerInfo info, std::function<void(int)> on_exit)
    : connection_(connection), info_(std::move(info)), on_exit_(std::move(on_exit)) {
  Dispatcher& d = connection_.dispatcher();
  d.set_gate([this](std::string_view method, bool is_request) { return lifecycle_.gate(method, is_request); });

  d.on_request("initialize", [this](const json& params, Reply reply) {
    protocol::ParamReader reader(params);
    protocol::InitializeParams client = protocol::read_initialize_params(reader);
    if (!reader.ok()) return reply.error(reader.error());
    client_ = std::move(client);
    lifecycle_.initialized();
    std::string who = client_.client_name.empty() ? "an unnamed client" : client_.client_name;
    if (!client_.client_version.empty()) who += " " + client_.client_version;
    spdlog::info("initialized by {}", who);
    reply.result(protocol::initialize_result(info_, advertised_methods()));
  });
  d.on_notification("initialized", [](const json&) { spdlog::debug("client confirmed initialization"); });
  d.on_request("shutdown", [this](const json&, Reply reply) {
    lifecycle_.shut_down();
    reply.result(nullptr);
  });
  d.on_notification("exit", [this](const json&) { end(lifecycle_.exit_code()); });
}

std::vector<std::string> LspServer::advertised_methods() {
  std::vector<std::string> out;
  for (auto& method : connection_.dispatcher().request_methods()) {
    bool lifecycle = method == "initialize" || method == "shutdown";
    bool test_only = method.rfind("test/", 0) == 0;
    if (!lifecycle && !test_only) out.push_back(std::move(method));
  }
  return out;
}

void LspServer::editor_gone() { end(lifecycle_.exit_code()); }

void LspServer::end(int exit_code) {
  if (ended_) return;
  ended_ = true;
  spdlog::info("exiting with code {}", exit_code);
  if (on_exit_) on_exit_(exit_code);
}

}  // namespace lockroom::rpc
