// GuestTerminals; see guest_terminals.h.
#include "server/acp/guest_terminals.h"

#include "protocol/params.h"
#include "server/acp/acp_errors.h"

namespace lockroom::acp {

bool keep_tail(std::string& text, std::size_t limit) {
  if (text.size() <= limit) return false;
  std::size_t cut = text.size() - limit;
  // Continuation bytes (10xxxxxx) belong to the character before them.
  while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) ++cut;
  text.erase(0, cut);
  return true;
}

GuestTerminals::GuestTerminals(LockroomLink& link, std::string sandbox_id) : link_(link), sandbox_id_(std::move(sandbox_id)) {}

void GuestTerminals::bind(rpc::Dispatcher& agent) {
  agent.on_request("terminal/create", [this](json params, rpc::Reply reply) { create(std::move(params), reply); });

  agent.on_request("terminal/output", [this](json params, rpc::Reply reply) {
    Terminal* t = find(params, reply);
    if (!t) return;
    json out{{"output", t->output}, {"truncated", t->truncated}};
    if (t->exit) out["exitStatus"] = *t->exit;
    reply.result(std::move(out));
  });

  agent.on_request("terminal/wait_for_exit", [this](json params, rpc::Reply reply) {
    Terminal* t = find(params, reply);
    if (!t) return;
    if (t->exit) return reply.result(*t->exit);
    t->waiting.push_back(reply);
  });

  agent.on_request("terminal/kill", [this](json params, rpc::Reply reply) {
    if (!find(params, reply)) return;
    kill(params["terminalId"].get<std::string>(), [reply] { reply.result(json::object()); });
  });

  agent.on_request("terminal/release", [this](json params, rpc::Reply reply) {
    if (!find(params, reply)) return;
    std::string id = params["terminalId"].get<std::string>();
    kill(id, [this, id, reply, alive = std::weak_ptr<bool>(alive_)] {
      if (alive.expired()) return;
      if (auto it = terminals_.find(id); it != terminals_.end()) {
        for (auto& w : it->second->waiting) w.error(kAcpInternalError, "the terminal was released");
        keep_released(id, *it->second);
        terminals_.erase(it);
        if (on_change_) on_change_(id);  // the tool calls showing it get its final text
      }
      reply.result(json::object());
    });
  });
}

void GuestTerminals::create(json params, rpc::Reply reply) {
  protocol::ParamReader reader(params);
  std::string command = reader.string("command", true).value_or("");
  auto args = reader.strings("args", false).value_or(std::vector<std::string>{});
  auto cwd = reader.string("cwd", false);
  auto limit = reader.integer("outputByteLimit", false, 0);
  if (!reader.ok()) return reply.error(reader.error());
  if (command.empty()) return reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"command\" is empty");
  json env = json::object();
  if (params.contains("env") && params["env"].is_array()) {
    for (const json& v : params["env"]) {
      if (v.is_object() && v.contains("name") && v["name"].is_string() && v.contains("value") && v["value"].is_string())
        env[v["name"].get<std::string>()] = v["value"];
    }
  }
  if (terminals_.size() >= kMaxTerminals)
    return reply.error(kAcpInternalError, "too many terminals (" + std::to_string(kMaxTerminals) + "): release the ones you are done with");
  std::vector<std::string> argv{command};
  argv.insert(argv.end(), args.begin(), args.end());
  json start{{"sandboxId", sandbox_id_}, {"argv", argv}, {"env", env}};
  if (cwd) start["cwd"] = *cwd;
  std::string shown = command;
  for (const auto& a : args) shown += " " + a;
  std::size_t cap = limit ? std::min<std::size_t>(static_cast<std::size_t>(*limit), kMaxOutputBytes) : kMaxOutputBytes;
  link_.call("process/start", start, std::chrono::seconds(60),
             [this, reply, shown, cap, alive = std::weak_ptr<bool>(alive_)](LinkAnswer answer) {
               if (alive.expired()) return;
               if (!answer.ok()) return reply.error(acp_error_from_lockroom(*answer.error));
               std::string id = answer.result.value("processId", "");
               auto t = std::make_unique<Terminal>();
               t->command = shown;
               t->limit = cap;
               terminals_[id] = std::move(t);
               reply.result(json{{"terminalId", id}});
             });
}

GuestTerminals::Terminal* GuestTerminals::find(const json& params, const rpc::Reply& reply) {
  if (!params.is_object() || !params.contains("terminalId") || !params["terminalId"].is_string()) {
    reply.error(protocol::rpc_error::kInvalidParams, "invalid params: \"terminalId\" is required");
    return nullptr;
  }
  auto it = terminals_.find(params["terminalId"].get<std::string>());
  if (it == terminals_.end()) {
    reply.error(kAcpResourceNotFound, "no terminal " + params["terminalId"].get<std::string>() + " (released, or never created)");
    return nullptr;
  }
  return it->second.get();
}

void GuestTerminals::kill(const std::string& id, std::function<void()> done) {
  auto it = terminals_.find(id);
  if (it == terminals_.end() || it->second->exit) return done();
  link_.call("process/signal", json{{"processId", id}, {"signal", "SIGKILL"}}, std::chrono::seconds(30),
             [done = std::move(done)](LinkAnswer) { done(); });  // a process that just ended is fine
}

void GuestTerminals::kill_all() {
  for (auto& [id, t] : terminals_) {
    if (!t->exit) link_.call("process/signal", json{{"processId", id}, {"signal", "SIGKILL"}}, std::chrono::seconds(30), [](LinkAnswer) {});
  }
}

bool GuestTerminals::output(const std::string& process_id, std::string_view bytes) {
  auto it = terminals_.find(process_id);
  if (it == terminals_.end()) return false;
  Terminal& t = *it->second;
  t.output.append(bytes);
  if (keep_tail(t.output, t.limit)) t.truncated = true;
  if (on_change_) on_change_(process_id);
  return true;
}

bool GuestTerminals::exited(const std::string& process_id, const json& exit) {
  auto it = terminals_.find(process_id);
  if (it == terminals_.end()) return false;
  Terminal& t = *it->second;
  json status{{"exitCode", exit.contains("exitCode") ? exit["exitCode"] : json(nullptr)},
              {"signal", exit.contains("signal") ? exit["signal"] : json(nullptr)}};
  t.exit = status;
  for (auto& w : t.waiting) w.result(status);
  t.waiting.clear();
  if (on_change_) on_change_(process_id);
  return true;
}

std::optional<GuestTerminals::Snapshot> GuestTerminals::snapshot(const std::string& terminal_id) const {
  if (auto it = terminals_.find(terminal_id); it != terminals_.end())
    return Snapshot{it->second->command, it->second->output, it->second->truncated, it->second->exit};
  if (auto it = released_.find(terminal_id); it != released_.end()) return it->second;
  return std::nullopt;
}

void GuestTerminals::keep_released(const std::string& id, const Terminal& t) {
  Snapshot last{t.command, t.output, t.truncated, t.exit};
  if (keep_tail(last.output, kReleasedTailBytes)) last.truncated = true;
  if (!released_.count(id)) released_order_.push_back(id);
  released_[id] = std::move(last);
  while (released_order_.size() > kMaxReleasedKept) {
    released_.erase(released_order_.front());
    released_order_.pop_front();
  }
}

}  // namespace lockroom::acp
