// `lockroom run`'s network: the default policy plus --allow hosts, and the summary of denied
// attempts printed when the command ends (read back from the sandbox's audit log).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/core/sandbox_network.h"

namespace lockroom::cli {

// An allow rule per "HOST" or "HOST:PORT"; the caller adds the kits and then the default allow
// list (core::apply_kit_plan, core::finish_network).
Result<core::NetworkRequest> network_request(const std::vector<std::string>& allow);

// "lockroom: 3 connections were denied: example.com:443 (default) ×2, ..." to stderr; nothing
// when none were.
void print_denied_summary(const std::filesystem::path& audit_log);

}  // namespace lockroom::cli
