// AcpServer; see acp_server.h.
#include "server/acp/acp_server.h"

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "protocol/channel/base64.h"
#include "server/acp/acp_errors.h"
#include "server/common/uv_defer.h"
#include "server/vm/image/sha256.h"

namespace lockroom::acp {

namespace fs = std::filesystem;

namespace {

constexpr auto kProbeTimeout = std::chrono::minutes(30);  // the first create may build an image

// What lockroom says of the inner agent's capabilities: what it can pass through as they are,
// and `sessionCapabilities.close`, which the face serves itself (the sandbox ends with it).
json agent_capabilities(const json& inner) {
  json caps = inner.is_object() ? inner.value("agentCapabilities", json::object()) : json::object();
  if (!caps.is_object()) caps = json::object();
  caps["sessionCapabilities"] = json{{"close", json::object()}};
  return caps;
}

std::string inner_title(const json& inner) {
  json info = inner.is_object() ? inner.value("agentInfo", json::object()) : json::object();
  if (!info.is_object()) return "the agent";
  std::string title = info.value("title", info.value("name", std::string("the agent")));
  return title.empty() ? "the agent" : title;
}

}  // namespace

fs::path initialize_cache_file(const fs::path& cache_dir, const AcpOptions& options) {
  json key{{"argv", options.argv}, {"kits", options.kits}, {"version", options.version}};
  return cache_dir / ("initialize-" + vm::image::sha256_hex(key.dump()).substr(0, 24) + ".json");
}

AcpServer::AcpServer(uv_loop_t* loop, LockroomLink& link, AcpOptions options, fs::path cache_dir, rpc::ConnectionOptions editor)
    : loop_(loop), link_(link), options_(std::move(options)), cache_file_(initialize_cache_file(cache_dir, options_)), editor_(loop, editor) {
  bind_editor_methods();
  bind_lockroom_events();
}

AcpServer::~AcpServer() { *alive_ = false; }

Result<void> AcpServer::start(std::function<void()> on_end) { return editor_.start(std::move(on_end)); }

void AcpServer::bind_editor_methods() {
  rpc::Dispatcher& d = editor_.dispatcher();
  d.on_request("initialize", [this](json params, rpc::Reply reply) { initialize(std::move(params), reply); });
  d.on_request("authenticate", [this](json params, rpc::Reply reply) {
    if (!params.is_object() || !params.contains("methodId") || !params["methodId"].is_string())
      return reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"methodId\" is required");
    // Each session's agent is told the method before its session starts.
    auth_method_ = params["methodId"].get<std::string>();
    reply.result(json::object());
  });
  d.on_request("session/new", [this](json params, rpc::Reply reply) { open_session("session/new", std::move(params), reply); });
  d.on_request("session/load", [this](json params, rpc::Reply reply) { open_session("session/load", std::move(params), reply); });
  d.on_request("session/prompt", [this](json params, rpc::Reply reply) {
    if (auto* s = session_for(params, reply)) s->prompt(std::move(params), reply);
  });
  d.on_notification("session/cancel", [this](const json& params) {
    if (params.is_object() && params.contains("sessionId") && params["sessionId"].is_string()) {
      if (auto it = sessions_.find(params["sessionId"].get<std::string>()); it != sessions_.end()) it->second->cancel();
    }
  });
  for (const char* method : {"session/set_mode", "session/set_config_option", "session/set_model"}) {
    d.on_request(method, [this, method](json params, rpc::Reply reply) {
      if (auto* s = session_for(params, reply)) s->forward(method, std::move(params), reply);
    });
  }
  d.on_request("session/close", [this](json params, rpc::Reply reply) {
    auto* s = session_for(params, reply);
    if (!s) return;
    std::string id = s->id();
    s->close([this, id, reply, alive = std::weak_ptr<bool>(alive_)] {
      if (alive.expired()) return;
      sessions_.erase(id);
      reply.result(json::object());
    });
  });
  d.on_request("_lockroom/review", [this](json params, rpc::Reply reply) {
    if (auto* s = session_for(params, reply)) s->lockroom_review(reply);
  });
  d.on_request("_lockroom/apply", [this](json params, rpc::Reply reply) {
    if (auto* s = session_for(params, reply)) s->lockroom_apply(params, reply);
  });
  d.on_request("_lockroom/discard", [this](json params, rpc::Reply reply) {
    if (auto* s = session_for(params, reply)) s->lockroom_discard(params, reply);
  });
}

void AcpServer::bind_lockroom_events() {
  rpc::Dispatcher& events = link_.incoming();
  events.on_notification("process/output", [this](const json& p) {
    std::string process = p.value("processId", "");
    std::string data = p.value("data", "");
    if (p.value("encoding", "") == "base64") {
      auto decoded = protocol::channel::base64_decode(data);
      if (!decoded) return spdlog::warn("process {}: output that is not base64 dropped", process);
      data = std::move(*decoded);
    }
    std::string stream = p.value("stream", "stdout");
    if (probe_agent_ && probe_agent_->process_id() == process) return probe_agent_->output(stream, data);
    if (auto* s = session_of_process(process)) s->process_output(process, stream, data);
  });
  events.on_notification("process/exited", [this](const json& p) {
    std::string process = p.value("processId", "");
    if (probe_agent_ && probe_agent_->process_id() == process) return probe_agent_->exited("the agent exited while it was asked `initialize`");
    if (auto* s = session_of_process(process)) s->process_exited(process, p);
  });
  events.on_notification("sandbox/stateChanged", [this](const json& p) {
    std::string state = p.value("state", "");
    if (state != "gone" && state != "failed") return;
    if (auto* s = session_of_sandbox(p.value("sandboxId", ""))) s->sandbox_ended(p.value("reason", state), p.value("message", ""));
  });
  events.on_notification("network/event", [this](const json& p) {
    if (auto* s = session_of_sandbox(p.value("sandboxId", ""))) s->network_event(p);
  });
  events.on_request("network/approve", [this](json p, rpc::Reply reply) {
    auto* s = session_of_sandbox(p.value("sandboxId", ""));
    if (!s) return reply.result(json{{"decision", "deny"}});  // the probe, or a session already gone
    s->approve_network(p, reply);
  });
  events.on_notification("window/logMessage", [](const json& p) { spdlog::info("lockroom: {}", p.value("message", "")); });
}

void AcpServer::initialize(json params, rpc::Reply reply) {
  std::ifstream in(cache_file_);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    json cached = json::parse(text.str(), nullptr, false);
    if (cached.is_object()) return answer_initialize(cached, reply);
    spdlog::warn("{} is not JSON; asking the agent again", cache_file_.string());
  }
  waiting_for_probe_.push_back(reply);
  if (waiting_for_probe_.size() == 1) probe();
}

void AcpServer::answer_initialize(const json& inner, rpc::Reply reply) {
  json info{{"name", "lockroom"}, {"title", inner_title(inner) + " (in a lockroom sandbox)"}, {"version", options_.version}};
  reply.result(json{{"protocolVersion", 1},
                    {"agentCapabilities", agent_capabilities(inner)},
                    {"authMethods", inner.is_object() ? inner.value("authMethods", json::array()) : json::array()},
                    {"agentInfo", info}});
}

void AcpServer::remember_initialize(const json& inner) {
  std::error_code ec;
  fs::create_directories(cache_file_.parent_path(), ec);
  fs::path tmp = cache_file_;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << inner.dump();
    if (!out) return spdlog::warn("cannot write {}", tmp.string());
  }
  fs::rename(tmp, cache_file_, ec);
  if (ec) spdlog::warn("cannot write {}: {}", cache_file_.string(), ec.message());
}

// Asks the inner agent `initialize` in a sandbox of its own (no workspace), then ends it.
void AcpServer::probe() {
  spdlog::info("asking {} what it can do (a sandbox without a workspace; the answer is cached)", options_.argv.empty() ? "?" : options_.argv[0]);
  std::weak_ptr<bool> alive = alive_;
  link_.call("sandbox/create", create_params(options_, nullptr), kProbeTimeout, [this, alive](LinkAnswer created) {
    if (alive.expired()) return;
    if (!created.ok())
      return probe_answered(rpc::CallOutcome{nullptr, protocol::RpcError{kAcpInternalError, "lockroom could not make a sandbox for the agent: " +
                                                                                                 created.error->message, nullptr}},
                            true);
    probe_sandbox_ = created.result.value("sandboxId", "");
    json start{{"sandboxId", probe_sandbox_}, {"argv", options_.argv}};
    link_.call("process/start", start, std::chrono::minutes(1), [this, alive](LinkAnswer started) {
      if (alive.expired()) return;
      if (!started.ok())
        return probe_answered(rpc::CallOutcome{nullptr, protocol::RpcError{kAcpInternalError, "the agent could not be started in the sandbox: " +
                                                                                                   started.error->message, nullptr}},
                            false);
      probe_agent_ = std::make_unique<InnerAgent>(loop_, link_, started.result.value("processId", ""), "agent (probe) in " + probe_sandbox_);
      json init{{"protocolVersion", 1},
                {"clientCapabilities", {{"fs", {{"readTextFile", true}, {"writeTextFile", true}}}, {"terminal", true}}},
                {"clientInfo", {{"name", "lockroom"}, {"version", options_.version}}}};
      probe_agent_->rpc().call("initialize", init, std::chrono::minutes(10), [this, alive](rpc::CallOutcome outcome) {
        if (alive.expired()) return;
        probe_answered(std::move(outcome), false);
      });
    });
  });
}

void AcpServer::probe_answered(rpc::CallOutcome outcome, bool sandbox_failed) {
  if (!outcome.error) remember_initialize(outcome.result);
  // An agent that cannot run without the project (`python3 /workspace/agent.py`) is not asked
  // before a session: the editor gets what every ACP agent can do, and the first session's own
  // answer fills the cache. A sandbox that cannot be made is an error the editor must see.
  if (outcome.error && !sandbox_failed)
    spdlog::warn("the agent could not be asked `initialize` without a workspace ({}); answering with ACP's defaults until a session has asked it",
                 outcome.error->message);
  auto waiting = std::move(waiting_for_probe_);
  waiting_for_probe_.clear();
  for (auto& reply : waiting) {
    if (outcome.error && sandbox_failed) reply.error(protocol::RpcError{outcome.error->code, outcome.error->message, outcome.error->data});
    else answer_initialize(outcome.error ? json::object() : outcome.result, reply);
  }
  if (probe_agent_) probe_agent_->exited("the probe is over");
  if (!probe_sandbox_.empty()) link_.call("sandbox/destroy", json{{"sandboxId", probe_sandbox_}}, std::chrono::minutes(1), [](LinkAnswer) {});
  probe_sandbox_.clear();
  // Not from inside the agent's own callback.
  if (probe_agent_) {
    auto* agent = probe_agent_.release();
    editor_.scheduler().start_timer(std::chrono::milliseconds(0), [agent] { delete agent; });
  }
}

void AcpServer::open_session(const std::string& method, json params, rpc::Reply reply) {
  if (stopping_) return reply.error(kAcpInternalError, "lockroom is shutting down");
  if (!params.is_object() || !params.contains("cwd") || !params["cwd"].is_string())
    return reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"cwd\" is required: the project folder, an absolute path");
  std::string cwd = params["cwd"].get<std::string>();
  std::error_code ec;
  if (cwd.empty() || cwd[0] != '/' || !fs::is_directory(cwd, ec))
    return reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"cwd\" must be an existing folder, an absolute path; got \"" + cwd + "\"");
  fs::path normal = fs::path(cwd).lexically_normal();
  std::string root = normal.string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  opening_.push_back(std::make_unique<AcpSession>(loop_, link_, editor_, options_, root));
  AcpSession* session = opening_.back().get();
  auto seen = [this](const json& inner) { remember_initialize(inner); };
  auto taken = [this](const std::string& id) { return sessions_.count(id) > 0; };
  session->open(method, std::move(params), auth_method_, seen, taken,
                [this, session, reply, alive = std::weak_ptr<bool>(alive_)](rpc::CallOutcome outcome) {
                  if (alive.expired()) return;
                  auto it = std::find_if(opening_.begin(), opening_.end(), [session](const auto& s) { return s.get() == session; });
                  if (it == opening_.end()) return;
                  std::unique_ptr<AcpSession> owned = std::move(*it);
                  opening_.erase(it);
                  if (outcome.error) {
                    reply.error(*outcome.error);
                    // Its sandbox goes; the session object outlives its callbacks until then (closed
                    // on a later turn, not inside its own callback).
                    auto* dying = owned.release();
                    defer(loop_, [dying] { dying->close([dying] { delete dying; }); });
                    return;
                  }
                  std::string id = owned->id();
                  sessions_[id] = std::move(owned);
                  reply.result(std::move(outcome.result));
                });
}

AcpSession* AcpServer::session_for(const json& params, const rpc::Reply& reply) {
  if (!params.is_object() || !params.contains("sessionId") || !params["sessionId"].is_string()) {
    reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"sessionId\" is required");
    return nullptr;
  }
  auto it = sessions_.find(params["sessionId"].get<std::string>());
  if (it == sessions_.end()) {
    reply.error(kAcpResourceNotFound, "no session " + params["sessionId"].get<std::string>() + " (closed, or never made by this lockroom)");
    return nullptr;
  }
  return it->second.get();
}

AcpSession* AcpServer::session_of_sandbox(const std::string& sandbox_id) {
  if (sandbox_id.empty()) return nullptr;
  for (auto& [id, s] : sessions_)
    if (s->sandbox_id() == sandbox_id) return s.get();
  for (auto& s : opening_)
    if (s->sandbox_id() == sandbox_id) return s.get();
  return nullptr;
}

AcpSession* AcpServer::session_of_process(const std::string& process_id) {
  for (auto& [id, s] : sessions_)
    if (s->owns_process(process_id)) return s.get();
  for (auto& s : opening_)
    if (s->owns_process(process_id)) return s.get();
  return nullptr;
}

void AcpServer::stop(std::function<void()> done) {
  if (stopping_) return;
  stopping_ = true;
  for (auto& reply : waiting_for_probe_) reply.error(kAcpInternalError, "lockroom is shutting down");
  waiting_for_probe_.clear();
  auto finish = [this, done = std::move(done)]() mutable {
    link_.shutdown([this, done = std::move(done)]() mutable { editor_.close(std::move(done)); });
  };
  if (!link_.shared()) {
    for (auto& [id, s] : sessions_) s->close([] {});
    for (auto& s : opening_) s->close([] {});
    return finish();
  }
  // The sandboxes stay in the shared server for a later session to resume; the link closes once
  // their agents were ended (each answers within seconds), and the probe's sandbox goes.
  auto left = std::make_shared<std::size_t>(sessions_.size() + opening_.size() + 1);
  auto one_done = [left, finish = std::make_shared<decltype(finish)>(std::move(finish))] {
    if (--*left == 0) (*finish)();
  };
  for (auto& [id, s] : sessions_) s->detach(one_done);
  for (auto& s : opening_) s->close(one_done);  // not resumable: the editor never learnt its id
  if (probe_sandbox_.empty()) return one_done();
  link_.call("sandbox/destroy", json{{"sandboxId", probe_sandbox_}}, std::chrono::seconds(30), [one_done](LinkAnswer) { one_done(); });
}

}  // namespace lockroom::acp
