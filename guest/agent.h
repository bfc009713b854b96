// Agent: the lockroom-agent's poll() loop and its method table.
//
// One thread, one poll() per turn over: the channel descriptor, a signalfd for SIGCHLD, and
// the pipes and terminals of started processes (each only when it can make progress). Control
// messages are answered synchronously in arrival order. Nothing ends the loop except a socket
// or inherited descriptor that closes (host runs); a port just waits for the next host. An
// exception in a turn is logged and the loop goes on: as PID 1 the agent must never die.
#pragma once

#include <string>

#include "guest/connection.h"
#include "guest/file_service.h"
#include "guest/net_service.h"
#include "guest/process_limits.h"
#include "guest/process_table.h"
#include "guest/rpc_server.h"
#include "guest/settings.h"
#include "guest/workspace_service.h"

namespace lockroom::agent {

class Agent {
 public:
  Agent(const AgentSettings& settings, Transport transport, bool pid1);
  ~Agent();
  // Serves until the transport is closed for good; returns the exit status.
  int run();

 private:
  void bind_methods();
  Outcome on_hello(const json& params);
  void on_session_lost(const std::string& why);
  void turn();
  void drain_signals();

  AgentSettings settings_;
  bool pid1_;
  Connection connection_;
  RpcServer rpc_;
  ProcessLimits limits_;
  ProcessTable processes_;
  FileService files_;
  WorkspaceService workspace_;
  NetService net_;
  int signal_fd_ = -1;
};

}  // namespace lockroom::agent
