// EditorProcess: a test's editor talking to a real `lockroom serve --stdio` process (the
// bridge, or --standalone) over its stdin and stdout, in Content-Length framing — as VS Code
// does. Built on the transcript runner's Child (tests/transcripts/child.h), which keeps stdout
// and stderr drained. request() writes one request and reads until its reply; every
// notification that arrives meanwhile is kept in `notifications`. One thread; blocking.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/rpc/framing.h"
#include "tests/support/wire_schema_check.h"
#include "tests/transcripts/child.h"

namespace lockroom::testing {

class EditorProcess {
 public:
  using json = nlohmann::json;
  using Clock = std::chrono::steady_clock;

  explicit EditorProcess(const std::vector<std::string>& argv) : child_(argv) {}

  // Sends a request without waiting for its reply; returns its id.
  int send_request(const std::string& method, const json& params) {
    int id = next_id_++;
    methods_by_id_[id] = method;
    send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    return id;
  }

  // The whole reply to `method` (REQUIREs that it came within `timeout`).
  json ask(const std::string& method, const json& params, std::chrono::seconds timeout = std::chrono::seconds(120)) {
    int id = send_request(method, params);
    bool got = pump_until([&] { return replies_.count(id) != 0; }, timeout);
    INFO(method << " " << params.dump() << " got no reply; stderr: " << child_.stderr_text());
    REQUIRE(got);
    return replies_[id];
  }
  json result(const std::string& method, const json& params, std::chrono::seconds timeout = std::chrono::seconds(120)) {
    json reply = ask(method, params, timeout);
    INFO(method << " " << params.dump() << " -> " << reply.dump());
    REQUIRE(reply.contains("result"));
    return reply["result"];
  }
  json error(const std::string& method, const json& params) {
    json reply = ask(method, params);
    INFO(method << " " << params.dump() << " -> " << reply.dump());
    REQUIRE(reply.contains("error"));
    return reply["error"];
  }
  void notify(const std::string& method, const json& params) { send(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}); }
  void initialize() {
    result("initialize", json{{"processId", nullptr}, {"clientInfo", {{"name", "test editor"}}}, {"capabilities", json::object()}});
    notify("initialized", json::object());
  }

  // Reads until `done()` holds or `timeout` passes; returns done().
  template <typename Pred>
  bool pump_until(Pred done, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    return child_.pump(deadline, [&] {
      take();
      return done();
    }) || (take(), done());
  }
  // The params of the notifications named `method`, in order.
  std::vector<json> notified(const std::string& method) const {
    std::vector<json> out;
    for (const auto& n : notifications)
      if (n.value("method", "") == method) out.push_back(n.value("params", json()));
    return out;
  }

  void close_stdin() { child_.close_stdin(); }
  // Waits for the process to exit; its exit code, or -1 (killed, or still running at the deadline).
  int wait_exit(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    if (!child_.wait_exit(Clock::now() + timeout)) return -2;
    take();
    return child_.exit_code();
  }
  const std::string& stderr_text() const { return child_.stderr_text(); }
  pid_t pid() const { return child_.pid(); }

  std::vector<json> notifications;

 private:
  void send(const json& message) {
    std::string problem = child_.write(framing_.encode(message.dump()), Clock::now() + std::chrono::seconds(30));
    INFO("stderr: " << child_.stderr_text());
    REQUIRE(problem.empty());
  }
  void take() {
    std::string bytes = child_.take_stdout();
    if (bytes.empty()) return;
    events_.clear();
    framing_.feed(bytes, events_);
    for (const auto& event : events_) {
      if (event.kind != rpc::FrameEvent::Kind::kMessage) continue;
      json message = json::parse(event.text, nullptr, false);
      if (!message.is_object()) continue;
      std::string answered;
      if (message.contains("id") && !message.contains("method") && message["id"].is_number_integer())
        answered = methods_by_id_[message["id"].get<int>()];
      // Everything the server sends matches protocol/schema.
      for (const auto& problem : WireSchemaCheck::instance().check(message, answered))
        FAIL_CHECK("the server sent what protocol/schema does not allow: " << problem << "\n  " << message.dump());
      if (message.contains("id") && !message.contains("method") && message["id"].is_number_integer())
        replies_[message["id"].get<int>()] = message;
      else if (message.contains("method") && !message.contains("id"))
        notifications.push_back(message);
    }
  }

  transcript::Child child_;
  rpc::ContentLengthFraming framing_;
  std::vector<rpc::FrameEvent> events_;
  std::map<int, json> replies_;
  std::map<int, std::string> methods_by_id_;
  int next_id_ = 1;
};

}  // namespace lockroom::testing
