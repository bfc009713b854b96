// The editor face of a guest's files: file/read and file/write (protocol/files.md), done by the
// sandbox's agent inside the guest. They never touch the host; the ACP face serves its inner
// agent's fs/read_text_file and fs/write_text_file with them.
#pragma once

#include "server/core/sandbox_manager.h"
#include "server/rpc/dispatcher.h"

namespace lockroom::api {

// Registers file/read and file/write; `manager` must outlive the dispatcher's handlers.
void bind_file_methods(rpc::Dispatcher& dispatcher, core::SandboxManager& manager);

}  // namespace lockroom::api
