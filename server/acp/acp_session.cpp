// AcpSession; see acp_session.h.
#include "server/acp/acp_session.h"

#include <spdlog/spdlog.h>

#include "protocol/channel/base64.h"
#include "server/acp/acp_errors.h"
#include "server/acp/session_sandbox.h"
#include "server/common/uv_defer.h"

namespace lockroom::acp {

namespace {

constexpr auto kAgentTimeout = std::chrono::minutes(10);   // initialize, session/new, set_mode…
constexpr auto kTurnTimeout = std::chrono::hours(24);      // a prompt turn, a permission question
constexpr auto kTerminalRefresh = std::chrono::milliseconds(250);
constexpr std::size_t kTerminalTextBytes = 64u << 10;  // the tail of a terminal shown in a tool call
constexpr std::size_t kMaxDeniedShown = 32;
constexpr std::size_t kMaxTerminalCalls = 256;  // tool calls showing a terminal that are kept current

rpc::CallOutcome failure(int code, std::string message) { return rpc::CallOutcome{nullptr, protocol::RpcError{code, std::move(message), nullptr}}; }

json text_block(const std::string& text) { return json{{"type", "content"}, {"content", {{"type", "text"}, {"text", text}}}}; }

}  // namespace

AcpSession::AcpSession(uv_loop_t* loop, LockroomLink& link, rpc::Connection& editor, const AcpOptions& options, std::string cwd)
    : loop_(loop), link_(link), editor_(editor), options_(options), paths_(std::move(cwd)) {}

AcpSession::~AcpSession() { *alive_ = false; }

rpc::RpcError AcpSession::ended_error() const { return protocol::RpcError{kAcpInternalError, "the session has ended: " + ended_why_, nullptr}; }

void AcpSession::open(const std::string& method, json params, std::optional<std::string> auth_method, InitializeSeen seen,
                      std::function<bool(const std::string&)> id_taken, std::function<void(rpc::CallOutcome)> done) {
  std::weak_ptr<bool> alive = alive_;
  const std::string& cwd = paths_.host_root();
  json asked = params;  // read by acquire_session_sandbox; `params` itself moves into the callback
  acquire_session_sandbox(link_, options_, method, asked, cwd,
             [=, this, params = std::move(params)](Result<SessionSandbox> got) mutable {
               if (alive.expired()) return;
               if (!got) return done(failure(kAcpInternalError, got.error().message));
               sandbox_id_ = got->sandbox_id;
               bool resumed = got->resumed;
               spdlog::info("session on {}: sandbox {}{}", cwd, sandbox_id_, resumed ? " (resumed)" : "");
               // lockroom's own part of _meta is not the agent's business.
               if (params.contains("_meta") && params["_meta"].is_object()) {
                 params["_meta"].erase("lockroom");
                 if (params["_meta"].empty()) params.erase("_meta");
               }
               start_agent([=, this, params = std::move(params)](std::optional<std::string> failed) mutable {
                 if (alive.expired()) return;
                 if (failed) return done(failure(kAcpInternalError, *failed));
                 json init{{"protocolVersion", 1},
                           {"clientCapabilities", {{"fs", {{"readTextFile", true}, {"writeTextFile", true}}}, {"terminal", true}}},
                           {"clientInfo", {{"name", "lockroom"}, {"version", options_.version}}}};
                 agent_->rpc().call("initialize", init, kAgentTimeout, [=, this, params = std::move(params)](rpc::CallOutcome inited) mutable {
                   if (alive.expired()) return;
                   if (inited.error) return done(failure(inited.error->code, "the agent did not initialize: " + inited.error->message));
                   seen(inited.result);
                   auto open_session = [=, this, params = std::move(params)]() mutable {
                     params["cwd"] = paths_.guest_root();
                     std::optional<std::string> wanted;
                     if (method == "session/load" && params.contains("sessionId") && params["sessionId"].is_string())
                       wanted = params["sessionId"].get<std::string>();
                     agent_->rpc().call(method, params, kAgentTimeout, [=, this](rpc::CallOutcome opened) mutable {
                       if (alive.expired()) return;
                       if (opened.error) return done(std::move(opened));
                       inner_id_ = wanted ? *wanted : (opened.result.is_object() ? opened.result.value("sessionId", "") : "");
                       if (inner_id_.empty()) return done(failure(kAcpInternalError, "the agent answered " + method + " without a sessionId"));
                       id_ = inner_id_;
                       if (id_taken(id_)) id_ = inner_id_ + "@" + sandbox_id_;
                       if (opened.result.is_object() && opened.result.contains("sessionId")) opened.result["sessionId"] = id_;
                       if (opened.result.is_null()) opened.result = json::object();
                       if (opened.result.is_object()) {
                         if (!opened.result.contains("_meta") || !opened.result["_meta"].is_object()) opened.result["_meta"] = json::object();
                         opened.result["_meta"]["lockroom"] = json{{"sandboxId", sandbox_id_}, {"resumed", resumed}, {"shared", link_.shared()}};
                       }
                       link_.call("sandbox/setLabel", json{{"sandboxId", sandbox_id_}, {"label", session_label(id_)}},
                                  std::chrono::seconds(30), [](LinkAnswer) {});
                       done(std::move(opened));
                       // The editor knows the session now: what the sandbox asked meanwhile is asked.
                       auto held = std::move(held_approvals_);
                       held_approvals_.clear();
                       for (auto& [question, reply] : held) approve_network(question, reply);
                     });
                   };
                   if (!auth_method) return open_session();
                   agent_->rpc().call("authenticate", json{{"methodId", *auth_method}}, kAgentTimeout,
                                      [=, this, open_session = std::move(open_session)](rpc::CallOutcome authed) mutable {
                                        if (alive.expired()) return;
                                        if (authed.error) return done(std::move(authed));
                                        open_session();
                                      });
                 });
               });
             });
}

void AcpSession::start_agent(std::function<void(std::optional<std::string>)> done) {
  json start{{"sandboxId", sandbox_id_}, {"argv", options_.argv}, {"cwd", paths_.guest_root()}};
  link_.call("process/start", start, std::chrono::minutes(1), [this, done = std::move(done), alive = std::weak_ptr<bool>(alive_)](LinkAnswer started) {
    if (alive.expired()) return;
    if (!started.ok()) return done("the agent could not be started in the sandbox: " + started.error->message);
    std::string process_id = started.result.value("processId", "");
    agent_ = std::make_unique<InnerAgent>(loop_, link_, process_id, "agent in " + sandbox_id_);
    files_ = std::make_unique<GuestFiles>(link_, sandbox_id_);
    terminals_ = std::make_unique<GuestTerminals>(link_, sandbox_id_);
    terminals_->on_change([this](const std::string& terminal) { show_terminal(terminal); });
    bind_agent_requests();
    done(std::nullopt);
  });
}

void AcpSession::bind_agent_requests() {
  rpc::Dispatcher& agent = agent_->rpc();
  files_->bind(agent);
  terminals_->bind(agent);
  agent.on_notification("session/update", [this](const json& params) { from_agent_update(params); });
  agent.on_request("session/request_permission", [this](json params, rpc::Reply reply) {
    params["sessionId"] = id_;
    if (params.contains("toolCall")) paths_.update_to_host(params["toolCall"]);
    editor_.dispatcher().call("session/request_permission", params, kTurnTimeout, [reply](rpc::CallOutcome answer) {
      if (answer.error) return reply.error(*answer.error);
      reply.result(std::move(answer.result));
    });
  });
}

void AcpSession::from_agent_update(json params) {
  if (!params.is_object() || !params.contains("update") || !params["update"].is_object()) {
    spdlog::warn("agent in {}: a session/update without an update object dropped", sandbox_id_);
    return;
  }
  params["sessionId"] = id_;
  json& update = params["update"];
  paths_.update_to_host(update);
  // Terminals live in the guest: the editor gets their output as text instead of an id it does not know.
  if (update.contains("content") && update["content"].is_array() && update.contains("toolCallId") && update["toolCallId"].is_string()) {
    std::string call = update["toolCallId"].get<std::string>();
    bool has_terminal = false;
    for (const json& item : update["content"])
      if (item.is_object() && item.value("type", "") == "terminal") has_terminal = true;
    if (has_terminal) {
      if (!terminal_calls_.count(call) && terminal_calls_.size() >= kMaxTerminalCalls) terminal_calls_.erase(terminal_calls_.begin());
      terminal_calls_[call] = update["content"];
      json shown = json::array();
      for (const json& item : update["content"]) {
        if (item.is_object() && item.value("type", "") == "terminal" && item.contains("terminalId") && item["terminalId"].is_string()) {
          calls_of_terminal_[item["terminalId"].get<std::string>()].insert(call);
          shown.push_back(terminal_text(item["terminalId"].get<std::string>()));
        } else {
          shown.push_back(item);
        }
      }
      update["content"] = shown;
    } else {
      terminal_calls_.erase(call);
    }
  }
  editor_.notify("session/update", params);
}

json AcpSession::terminal_text(const std::string& terminal_id) const {
  auto snap = terminals_ ? terminals_->snapshot(terminal_id) : std::nullopt;
  if (!snap) return text_block("(terminal " + terminal_id + " is gone)");
  std::string output = snap->output;
  bool cut = snap->truncated;
  if (output.size() > kTerminalTextBytes) {
    keep_tail(output, kTerminalTextBytes);
    cut = true;
  }
  std::string text = "$ " + snap->command + "\n" + (cut ? "…\n" : "") + output;
  if (!output.empty() && output.back() != '\n') text += "\n";
  if (snap->exit) {
    const json& e = *snap->exit;
    text += e["exitCode"].is_number() ? "[exit code " + std::to_string(e["exitCode"].get<int>()) + "]"
                                      : "[ended by " + (e["signal"].is_string() ? e["signal"].get<std::string>() : std::string("a signal")) + "]";
  }
  return text_block("```\n" + text + "\n```");
}

// A terminal changed: the tool calls showing it get its text again, at most every kTerminalRefresh.
void AcpSession::show_terminal(const std::string& terminal_id) {
  if (!calls_of_terminal_.count(terminal_id)) return;
  terminal_refresh_due_.insert(terminal_id);
  if (terminal_refresh_armed_) return;
  terminal_refresh_armed_ = true;
  editor_.scheduler().start_timer(kTerminalRefresh, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired()) return;
    terminal_refresh_armed_ = false;
    auto due = std::move(terminal_refresh_due_);
    terminal_refresh_due_.clear();
    std::set<std::string> calls;
    for (const auto& t : due)
      for (const auto& c : calls_of_terminal_[t]) calls.insert(c);
    for (const auto& call : calls) {
      auto it = terminal_calls_.find(call);
      if (it == terminal_calls_.end()) continue;
      json shown = json::array();
      for (const json& item : it->second) {
        if (item.is_object() && item.value("type", "") == "terminal" && item.contains("terminalId") && item["terminalId"].is_string())
          shown.push_back(terminal_text(item["terminalId"].get<std::string>()));
        else
          shown.push_back(item);
      }
      json update{{"sessionUpdate", "tool_call_update"}, {"toolCallId", call}, {"content", shown}};
      editor_.notify("session/update", json{{"sessionId", id_}, {"update", update}});
    }
  });
}

void AcpSession::prompt(json params, rpc::Reply reply) {
  if (ended()) return reply.error(ended_error());
  if (turn_) return reply.error(kAcpInternalError, "a turn is already in progress in this session; cancel it or wait for it");
  params["sessionId"] = inner_id_;
  if (params.contains("prompt")) paths_.prompt_to_guest(params["prompt"]);
  turn_ = reply;
  cancelled_ = false;
  agent_->rpc().call("session/prompt", params, kTurnTimeout, [this, alive = std::weak_ptr<bool>(alive_)](rpc::CallOutcome outcome) {
    if (alive.expired() || !turn_) return;
    if (outcome.error) {
      auto reply = *turn_;
      turn_.reset();
      return reply.error(ended() ? ended_error() : *outcome.error);
    }
    bool cancelled = cancelled_ || (outcome.result.is_object() && outcome.result.value("stopReason", "") == "cancelled");
    if (cancelled) return finish_turn(std::move(outcome.result));
    review_ = std::make_unique<TurnReview>(link_, editor_, paths_, sandbox_id_, id_, "lockroom-review-" + std::to_string(++reviews_));
    review_->run([this, result = std::move(outcome.result), alive](ReviewOutcome how, const std::string&) mutable {
      if (alive.expired()) return;
      if (how == ReviewOutcome::kCancelled && result.is_object()) result["stopReason"] = "cancelled";
      finish_turn(std::move(result));
    });
  });
}

void AcpSession::finish_turn(json result) {
  if (!turn_) return;
  auto reply = *turn_;
  turn_.reset();
  if (cancelled_ && result.is_object()) result["stopReason"] = "cancelled";
  reply.result(std::move(result));
}

void AcpSession::cancel() {
  if (!turn_) return;
  cancelled_ = true;
  if (agent_ && agent_->running()) agent_->rpc().notify("session/cancel", json{{"sessionId", inner_id_}});
  // A review waiting for the user ends now; the agent's own answer ends a turn still running.
  if (review_) review_->cancel();
}

void AcpSession::forward(const std::string& method, json params, rpc::Reply reply) {
  if (ended()) return reply.error(ended_error());
  params["sessionId"] = inner_id_;
  agent_->rpc().call(method, params, kAgentTimeout, [this, reply, alive = std::weak_ptr<bool>(alive_)](rpc::CallOutcome outcome) {
    if (alive.expired()) return;
    if (outcome.error) return reply.error(*outcome.error);
    if (outcome.result.is_object() && outcome.result.contains("sessionId")) outcome.result["sessionId"] = id_;
    reply.result(std::move(outcome.result));
  });
}

void AcpSession::lockroom_review(rpc::Reply reply) {
  if (ended()) return reply.error(ended_error());
  link_.call("changes/list", json{{"sandboxId", sandbox_id_}}, std::chrono::minutes(10), [this, reply](LinkAnswer answer) {
    if (!answer.ok()) return reply.error(acp_error_from_lockroom(*answer.error));
    json files = json::array();
    for (json f : answer.result.value("files", json::array())) {
      f["hostPath"] = paths_.host_root() + "/" + f.value("path", "");
      files.push_back(std::move(f));
    }
    reply.result(json{{"sandboxId", sandbox_id_}, {"viewId", answer.result.value("viewId", "")}, {"files", files},
                      {"refused", answer.result.value("refused", json::array())}});
  });
}

void AcpSession::lockroom_apply(const json& params, rpc::Reply reply) {
  if (ended()) return reply.error(ended_error());
  if (!params.contains("viewId") || !params["viewId"].is_string())
    return reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"viewId\" is required: the viewId of the _lockroom/review you showed");
  json apply{{"sandboxId", sandbox_id_}, {"viewId", params["viewId"]}};
  if (params.contains("paths") && params["paths"].is_array()) {
    json select = json::array();
    for (const json& p : params["paths"]) select.push_back(json{{"path", p}});
    apply["select"] = select;
  }
  link_.call("changes/apply", apply, std::chrono::minutes(10), [reply](LinkAnswer answer) {
    if (!answer.ok()) return reply.error(acp_error_from_lockroom(*answer.error));
    reply.result(std::move(answer.result));
  });
}

void AcpSession::lockroom_discard(const json& params, rpc::Reply reply) {
  if (ended()) return reply.error(ended_error());
  json discard{{"sandboxId", sandbox_id_}};
  if (params.contains("paths") && params["paths"].is_array()) discard["paths"] = params["paths"];
  link_.call("changes/discard", discard, std::chrono::minutes(10), [reply](LinkAnswer answer) {
    if (!answer.ok()) return reply.error(acp_error_from_lockroom(*answer.error));
    reply.result(std::move(answer.result));
  });
}

bool AcpSession::owns_process(const std::string& process_id) const {
  if (agent_ && agent_->process_id() == process_id) return true;
  return terminals_ && terminals_->has(process_id);
}

void AcpSession::process_output(const std::string& process_id, const std::string& stream, std::string_view bytes) {
  if (agent_ && agent_->process_id() == process_id) return agent_->output(stream, bytes);
  if (terminals_) terminals_->output(process_id, bytes);
}

void AcpSession::process_exited(const std::string& process_id, const json& params) {
  if (agent_ && agent_->process_id() == process_id) {
    std::string how = params.contains("exitCode") ? "exit code " + params["exitCode"].dump()
                                                  : "signal " + params.value("signal", std::string("?"));
    if (params.contains("reason")) how += ", " + params.value("reason", "");
    return end("the agent exited (" + how + "); its log is in lockroom's log");
  }
  if (terminals_) terminals_->exited(process_id, params);
}

void AcpSession::sandbox_ended(const std::string& reason, const std::string& message) {
  end("its sandbox " + sandbox_id_ + " ended (" + reason + (message.empty() ? "" : ": " + message) + ")");
}

void AcpSession::end(const std::string& why) {
  if (ended()) return;
  ended_why_ = why;
  for (auto& [question, reply] : held_approvals_) reply.result(json{{"decision", "deny"}});
  held_approvals_.clear();
  spdlog::warn("session {}: {}", id_.empty() ? sandbox_id_ : id_, why);
  if (review_) review_->cancel();
  if (agent_) agent_->exited(why);
  if (turn_) {
    auto reply = *turn_;
    turn_.reset();
    reply.error(ended_error());
  }
  if (terminals_) terminals_->kill_all();
  if (!sandbox_id_.empty()) link_.call("sandbox/destroy", json{{"sandboxId", sandbox_id_}}, std::chrono::minutes(1), [](LinkAnswer) {});
}

bool AcpSession::stop(const std::string& why) {
  for (auto& [question, reply] : held_approvals_) reply.result(json{{"decision", "deny"}});
  held_approvals_.clear();
  if (ended()) return false;
  ended_why_ = why;
  if (review_) review_->cancel();
  if (turn_) {
    auto reply = *turn_;
    turn_.reset();
    reply.result(json{{"stopReason", "cancelled"}});
  }
  if (terminals_) terminals_->kill_all();
  return true;
}

void AcpSession::close(std::function<void()> done) {
  if (turn_) cancel();
  if (!stop("closed")) return done();
  if (agent_) agent_->exited("the session was closed");
  if (sandbox_id_.empty()) return done();
  link_.call("sandbox/destroy", json{{"sandboxId", sandbox_id_}}, std::chrono::minutes(1), [done = std::move(done)](LinkAnswer) { done(); });
}

void AcpSession::detach(std::function<void()> done) {
  // Nothing may run unattended: the agent and its terminals end; the sandbox and its files stay.
  if (!stop("the editor went away; the sandbox waits to be resumed") || !agent_) return done();
  std::string process = agent_->process_id();
  agent_->exited("the editor went away");
  link_.call("process/signal", json{{"processId", process}, {"signal", "SIGKILL"}}, std::chrono::seconds(10),
             [done = std::move(done)](LinkAnswer) { done(); });
}

void AcpSession::network_event(const json& params) {
  std::string decision = params.value("decision", "");
  if (decision != "deny" && decision != "block") return;
  if (params.value("phase", "close") != "close" || params.contains("approvalId")) return;  // the user saw the question
  std::string host = params.value("host", "?");
  std::string key = host + ":" + (params.contains("port") ? params["port"].dump() : "?");
  if (denied_shown_.count(key) || denied_shown_.size() >= kMaxDeniedShown) return;
  denied_shown_.insert(key);
  std::string what = params.value("method", std::string("")) + " " + params.value("scheme", std::string("")) + "://" + key;
  json update{{"sessionUpdate", "tool_call"},
              {"toolCallId", "lockroom-net-" + std::to_string(denied_shown_.size()) + "-" + key},
              {"title", (decision == "block" ? "Blocked by lockroom: " : "Denied by the sandbox's network policy: ") + what},
              {"kind", "fetch"},
              {"status", "failed"},
              {"content", json::array({text_block(params.value("reason", std::string("no rule allows it")) +
                                                  (decision == "deny" ? " (allow it with `--allow " + host + "` or a kit's network rules)" : ""))})},
              {"rawInput", params}};
  editor_.notify("session/update", json{{"sessionId", id_}, {"update", update}});
}

void AcpSession::approve_network(const json& params, rpc::Reply reply) {
  if (id_.empty()) {
    held_approvals_.emplace_back(params, reply);
    return;
  }
  std::string host = params.value("host", "?");
  std::string target = params.value("scheme", std::string("tcp")) + "://" + host + ":" + (params.contains("port") ? params["port"].dump() : "?");
  std::string call = "lockroom-approve-" + params.value("approvalId", std::string("0"));
  std::string title = "Let the sandbox connect to " + target + "?";
  json raw{{"host", host}, {"port", params.value("port", 0)}, {"scheme", params.value("scheme", "")}};
  if (params.contains("process")) raw["process"] = params["process"];
  if (params.contains("method")) raw["method"] = params["method"];
  if (params.contains("path")) raw["path"] = params["path"];
  json tool{{"toolCallId", call}, {"title", title}, {"kind", "fetch"}, {"status", "pending"}, {"rawInput", raw}};
  json announce = tool;
  announce["sessionUpdate"] = "tool_call";
  editor_.notify("session/update", json{{"sessionId", id_}, {"update", announce}});
  json options = json::array({json{{"optionId", "allowOnce"}, {"name", "Allow once"}, {"kind", "allow_once"}},
                              json{{"optionId", "allowSandbox"}, {"name", "Allow for this session"}, {"kind", "allow_always"}},
                              json{{"optionId", "deny"}, {"name", "Deny"}, {"kind", "reject_once"}}});
  auto timeout = std::chrono::milliseconds(params.value("timeoutMs", 60000));
  editor_.dispatcher().call("session/request_permission", json{{"sessionId", id_}, {"toolCall", tool}, {"options", options}}, timeout,
                            [this, reply, call, alive = std::weak_ptr<bool>(alive_)](rpc::CallOutcome answer) {
                              std::string decision = "deny";
                              if (!answer.error && answer.result.is_object()) {
                                const json o = answer.result.value("outcome", json::object());
                                if (o.value("outcome", "") == "selected") decision = o.value("optionId", "deny");
                              }
                              if (decision != "allowOnce" && decision != "allowSandbox") decision = "deny";
                              reply.result(json{{"decision", decision}});
                              if (alive.expired()) return;
                              json update{{"sessionUpdate", "tool_call_update"}, {"toolCallId", call},
                                          {"status", decision == "deny" ? "failed" : "completed"}};
                              editor_.notify("session/update", json{{"sessionId", id_}, {"update", update}});
                            });
}

}  // namespace lockroom::acp
