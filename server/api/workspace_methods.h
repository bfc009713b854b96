// The editor face of workspaces: changes/list, changes/diff, changes/content, changes/apply,
// changes/discard and workspace/sync (protocol/workspace.md), on sandboxes created with a
// `workspace`. Each method asks the SandboxManager for the sandbox's SandboxWorkspace and turns
// its core results into the documented JSON. Loop thread only.
#pragma once

#include <optional>
#include <string>

#include "server/core/sandbox_manager.h"
#include "server/rpc/connection.h"

namespace lockroom::api {

// Registers the methods; `manager` must outlive the connection's dispatching.
void bind_workspace_methods(rpc::Connection& connection, core::SandboxManager& manager);

// Registers only the review methods (changes/list, diff, content, apply, discard) on `dispatcher`,
// e.g. a sandbox's control socket (control_socket.h). With `only_sandbox`, a request naming any
// other sandbox is refused as not found. With `connection`, requests that carry a workDoneToken
// report $/progress on it.
void bind_changes_methods(rpc::Dispatcher& dispatcher, core::SandboxManager& manager,
                          std::optional<std::string> only_sandbox = std::nullopt, rpc::Connection* connection = nullptr);

// sandbox/create's `workspace` result.
protocol::json workspace_summary_json(const core::WorkspaceSummary& summary);

}  // namespace lockroom::api
