// Session; see session.h.
#include "server/serve/session.h"

#include <spdlog/spdlog.h>

#include "protocol/sandbox.h"
#include "server/api/error_map.h"
#include "server/api/file_methods.h"
#include "server/api/kit_methods.h"
#include "server/api/network_methods.h"
#include "server/api/workspace_methods.h"
#include "server/rpc/builtin_methods.h"

namespace lockroom::serve {

using protocol::json;

Session::Session(SessionServices services, SessionId id, rpc::ConnectionOptions options,
                 std::shared_ptr<const std::map<std::string, std::string>> client_env, std::string label)
    : services_(std::move(services)),
      id_(id),
      connection_(services_.loop, options),
      methods_(connection_),
      lsp_(connection_, services_.info, [this](int code) {
        if (auto fn = std::move(on_end_)) fn(code);
      }) {
  SessionRouter* router = services_.router;
  api::SandboxOwnership own;
  own.claim = [router, id](const std::string& sandbox_id) { return router->claim(id, sandbox_id); };
  own.connected = [connected = connected_] { return *connected; };
  own.started = [router](const std::string& sandbox_id, const std::string& process_id) { router->process_started(sandbox_id, process_id); };
  own.listed = [router, id](const std::string& sandbox_id, json& entry) {
    switch (router->relation(id, sandbox_id)) {
      case SessionRouter::Relation::kMine: entry["attached"] = true; return true;
      case SessionRouter::Relation::kDetached:
        entry["attached"] = false;
        entry["detachedMs"] = router->detached_ms(sandbox_id).value_or(0);
        return true;
      case SessionRouter::Relation::kOther:    // another live connection's: not this editor's business
      case SessionRouter::Relation::kUnknown:  // still being created, or being destroyed unowned
        return false;
    }
    return false;
  };
  own.client_env = client_env;
  methods_.set_ownership(std::move(own));

  rpc::register_builtin_methods(connection_);
  methods_.bind(*services_.manager, *services_.watch);
  api::bind_workspace_methods(connection_, *services_.manager);
  api::bind_network_methods(connection_, *services_.manager);
  api::bind_kit_methods(connection_.dispatcher(), services_.loop, std::move(client_env));
  api::bind_file_methods(connection_.dispatcher(), *services_.manager);
  bind_attach();
  methods_.set_client_can_approve([this] { return lsp_.client().network_approval; });
  if (services_.test_mode) rpc::register_test_methods(connection_);
  router->add_session(id_, methods_, std::move(label));
}

Session::~Session() {
  *connected_ = false;
  if (!closed_) services_.router->remove_session(id_);
}

Result<void> Session::start(std::function<void(int)> on_end) {
  on_end_ = std::move(on_end);
  return connection_.start([this] { lsp_.editor_gone(); });
}

void Session::close(std::string trailer, std::function<void()> done) {
  if (closed_) return;
  closed_ = true;
  *connected_ = false;
  services_.router->remove_session(id_);
  if (!trailer.empty()) connection_.write_raw(trailer);
  connection_.close(std::move(done));
}

void Session::bind_attach() {
  core::SandboxManager* m = services_.manager;
  SessionRouter* router = services_.router;
  SessionId id = id_;
  connection_.dispatcher().on_request("sandbox/attach", [m, router, id](const json& params, rpc::Reply reply) {
    protocol::ParamReader reader(params);
    auto p = protocol::read_sandbox_id(reader);
    if (!reader.ok()) return reply.error(reader.error());
    auto attached = router->attach(id, p.sandbox_id);
    if (!attached) return reply.error(api::to_rpc_error(attached.error()));
    json sandbox;
    for (const auto& s : m->list())
      if (s.id == p.sandbox_id) sandbox = api::sandbox_entry_json(*m, s);
    sandbox["attached"] = true;
    json processes = json::array();
    for (const auto& process : attached->processes)
      processes.push_back({{"processId", process.process_id}, {"running", process.running}, {"droppedBytes", process.dropped_bytes}});
    const ReplayStats& stats = attached->stats;
    reply.result(json{{"sandbox", std::move(sandbox)},
                      {"processes", std::move(processes)},
                      {"detachedMs", attached->detached_ms},
                      {"replay", {{"events", attached->replay.size()},
                                  {"outputBytes", stats.kept_output_bytes},
                                  {"droppedOutputBytes", stats.dropped_output_bytes},
                                  {"droppedNetworkEvents", stats.dropped_network_events}}}});
    // What happened meanwhile follows the answer, as the notifications it would have been.
    router->replay_to(id, p.sandbox_id, std::move(attached->replay));
  });
}

}  // namespace lockroom::serve
