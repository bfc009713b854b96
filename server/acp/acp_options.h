// What `lockroom acp` was asked for (its command line): the inner agent and the sandbox every
// session gets.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "protocol/jsonrpc.h"

namespace lockroom::acp {

struct AcpOptions {
  std::vector<std::string> argv;   // the inner ACP agent, run in the guest at /workspace
  std::vector<std::string> kits;   // given to every session's sandbox
  std::vector<std::string> allow;  // HOST or HOST:PORT allowed besides the kits' and the defaults
  bool no_network = false;         // no way out at all
  bool ask = true;                 // connections no rule covers: ask the editor (else denied)
  // NAME=HOST[,HOST…]: the value of $NAME here (the editor's environment) injected by the proxy
  // for those hosts; the guest holds a sentinel.
  std::vector<std::string> secrets;
  protocol::json resources = protocol::json::object();  // sandbox/create's `resources`
  std::map<std::string, std::string> env;               // for every process in the guest
  std::string version;                                   // lockroom's
};

// sandbox/create's params for a session on `cwd` (null: no workspace, for the probe).
protocol::json create_params(const AcpOptions& options, const std::string* cwd);

}  // namespace lockroom::acp
