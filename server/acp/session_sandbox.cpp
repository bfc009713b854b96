// The sandbox of an ACP session; see session_sandbox.h.
#include "server/acp/session_sandbox.h"

#include <spdlog/spdlog.h>

namespace lockroom::acp {

namespace {

constexpr auto kCreateTimeout = std::chrono::minutes(30);  // a first create may build an image
constexpr auto kQuickTimeout = std::chrono::seconds(30);
// A sandbox named for resuming that is not (yet) detached is looked for again this often, this
// many times: the window going away (a reload) detaches it within moments.
constexpr auto kInUseRetry = std::chrono::milliseconds(500);
constexpr int kInUseTries = 10;

Error failed(std::string message) { return make_error(ErrorCode::kUnavailable, std::move(message)); }

void create(LockroomLink& link, const AcpOptions& options, const std::string& cwd, std::function<void(Result<SessionSandbox>)> done) {
  link.call("sandbox/create", create_params(options, &cwd), kCreateTimeout, [done = std::move(done)](LinkAnswer created) {
    if (!created.ok()) return done(failed("lockroom could not make the sandbox for this session: " + created.error->message));
    done(SessionSandbox{created.result.value("sandboxId", ""), false});
  });
}

// Kills what an earlier editor started in the sandbox, then `done`.
void kill_client_processes(LockroomLink& link, const std::string& sandbox_id, std::function<void()> done) {
  link.call("process/list", json{{"sandboxId", sandbox_id}}, kQuickTimeout, [&link, sandbox_id, done = std::move(done)](LinkAnswer listed) {
    if (!listed.ok()) {
      spdlog::warn("sandbox {}: cannot list its processes ({}); an earlier agent may still run there", sandbox_id, listed.error->message);
      return done();
    }
    for (const json& p : listed.result.value("processes", json::array())) {
      if (!p.is_object() || !p.value("running", false) || p.value("origin", "") != "client") continue;
      std::string id = p.value("processId", "");
      spdlog::info("sandbox {}: ending process {} an earlier session started", sandbox_id, id);
      link.call("process/signal", json{{"processId", id}, {"signal", "SIGKILL"}}, kQuickTimeout, [](LinkAnswer) {});
    }
    done();
  });
}

void attach(LockroomLink& link, const std::string& sandbox_id, std::function<void(Result<SessionSandbox>)> done) {
  link.call("sandbox/attach", json{{"sandboxId", sandbox_id}}, kQuickTimeout, [&link, sandbox_id, done = std::move(done)](LinkAnswer attached) {
    if (!attached.ok()) return done(failed("lockroom could not resume sandbox " + sandbox_id + ": " + attached.error->message));
    kill_client_processes(link, sandbox_id, [sandbox_id, done] { done(SessionSandbox{sandbox_id, true}); });
  });
}

}  // namespace

std::string session_label(const std::string& session_id) { return "acp session " + session_id.substr(0, 120); }

std::optional<std::string> requested_sandbox(const json& params) {
  if (!params.is_object() || !params.contains("_meta") || !params["_meta"].is_object()) return std::nullopt;
  const json& meta = params["_meta"];
  if (!meta.contains("lockroom") || !meta["lockroom"].is_object()) return std::nullopt;
  const json& ours = meta["lockroom"];
  if (!ours.contains("sandboxId") || !ours["sandboxId"].is_string()) return std::nullopt;
  return ours["sandboxId"].get<std::string>();
}

// What to resume: the sandbox named, or the one labelled for the session being loaded.
struct ResumeWish {
  std::optional<std::string> sandbox_id;
  std::string load_id;
  std::string cwd;
  int tries_left = kInUseTries;
};

void find_and_attach(LockroomLink& link, const AcpOptions& options, ResumeWish wish, std::function<void(Result<SessionSandbox>)> done) {
  link.call("sandbox/list", json::object(), kQuickTimeout, [&link, &options, wish, done = std::move(done)](LinkAnswer listed) mutable {
    if (!listed.ok()) return done(failed("lockroom could not list its sandboxes: " + listed.error->message));
    // Among a connection's list: its own sandboxes (attached) and the detached ones.
    std::optional<json> found;
    const json sandboxes = listed.result.value("sandboxes", json::array());
    for (const json& s : sandboxes) {
      if (!s.is_object()) continue;
      bool match = wish.sandbox_id ? s.value("sandboxId", "") == *wish.sandbox_id
                                   : s.value("label", "") == session_label(wish.load_id) && s.value("workspace", "") == wish.cwd;
      if (match) {
        found = s;
        break;
      }
    }
    if (!found && !wish.sandbox_id) return create(link, options, wish.cwd, std::move(done));
    // Not listed: another live connection's — the window that is going away may not have
    // let it go yet — or gone. Asked again for a few seconds.
    if (!found && link.shared() && --wish.tries_left > 0)
      return link.after(kInUseRetry, [&link, &options, wish, done = std::move(done)]() mutable { find_and_attach(link, options, wish, std::move(done)); });
    if (!found)
      return done(failed("sandbox " + *wish.sandbox_id + " cannot be resumed: this user's lockroom server has no such sandbox waiting (it ended, " +
                         (link.shared() ? "its grace ran out, or another window has it)" : "or this lockroom acp runs without --shared)")));
    std::string id = found->value("sandboxId", "");
    if (found->value("attached", false)) return done(failed("sandbox " + id + " cannot be resumed: another session of this lockroom acp has it"));
    if (found->value("workspace", "") != wish.cwd)
      return done(failed("sandbox " + id + " cannot be resumed for " + wish.cwd + ": its workspace is " + found->value("workspace", std::string("none"))));
    attach(link, id, std::move(done));
  });
}

void acquire_session_sandbox(LockroomLink& link, const AcpOptions& options, const std::string& method, const json& params,
                             const std::string& cwd, std::function<void(Result<SessionSandbox>)> done) {
  ResumeWish wish;
  wish.sandbox_id = requested_sandbox(params);
  if (method == "session/load" && params.contains("sessionId") && params["sessionId"].is_string()) wish.load_id = params["sessionId"].get<std::string>();
  wish.cwd = cwd;
  if (!wish.sandbox_id && (wish.load_id.empty() || !link.shared())) return create(link, options, cwd, std::move(done));
  find_and_attach(link, options, std::move(wish), std::move(done));
}

}  // namespace lockroom::acp
