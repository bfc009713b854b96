// The editor face of workspaces: changes/list, changes/diff, changes/content, changes/apply,
// changes/discard and workspace/sync (protocol/workspace.md), on sandboxes created with a
// `workspace`. Each method asks the SandboxManager for the sandbox's SandboxWorkspace and turns
// its core results into the documented JSON. Loop thread only.
#pragma once

#include "server/core/sandbox_manager.h"
#include "server/rpc/connection.h"

namespace lockroom::api {

// Registers the methods; `manager` must outlive the connection's dispatching.
void bind_workspace_methods(rpc::Connection& connection, core::SandboxManager& manager);

// sandbox/create's `workspace` result.
protocol::json workspace_summary_json(const core::WorkspaceSummary& summary);

}  // namespace lockroom::api
