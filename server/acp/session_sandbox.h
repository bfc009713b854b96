// How an ACP session gets its sandbox: a new one on the session's folder, or — through the
// per-user shared server (`lockroom acp --shared`) — a detached one that an earlier `lockroom
// acp --shared` left when its editor went away (a window reload):
//  - the one the editor names in `_meta.lockroom.sandboxId` of session/new or session/load (it
//    must be detached and on the same folder, else the open fails saying why);
//  - for session/load without it, the detached sandbox on the same folder labelled for that
//    session id (session_label), if there is one; else a new sandbox.
// A resumed sandbox keeps its files, its changes not applied yet and its kits' services; the
// processes an editor started there (origin "client": the previous agent and its terminals) are
// killed, since nobody can talk to them any more. Loop thread only.
#pragma once

#include <functional>
#include <string>

#include "server/acp/acp_options.h"
#include "server/acp/lockroom_link.h"

namespace lockroom::acp {

struct SessionSandbox {
  std::string sandbox_id;
  bool resumed = false;  // attached, not created
};

// The label a session's sandbox carries (sandbox/setLabel), by which session/load finds it.
std::string session_label(const std::string& session_id);

// The sandbox `_meta.lockroom.sandboxId` names in a session/new or session/load, if any.
std::optional<std::string> requested_sandbox(const json& params);

// Gets the sandbox for a session opened by `method` with `params` on `cwd`. Errors are the
// message to show the user.
void acquire_session_sandbox(LockroomLink& link, const AcpOptions& options, const std::string& method, const json& params,
                             const std::string& cwd, std::function<void(Result<SessionSandbox>)> done);

}  // namespace lockroom::acp
