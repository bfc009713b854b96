// Opening the agent's one connection to the host.
//
// In a guest it is the virtio-serial port, found by name in /sys/class/virtio-ports/*/name (or
// given as a device path). On the host, for tests, it is a unix socket the agent connects to, or
// a descriptor it inherited (one end of a socketpair). The descriptor comes back non-blocking
// and close-on-exec. A port outlives host disconnects (the agent waits for the next host);
// a socket or inherited descriptor does not (the agent exits when it closes).
#pragma once

#include <string>

#include "guest/settings.h"
#include "server/common/result.h"

namespace lockroom::agent {

struct Transport {
  int fd = -1;
  bool is_port = false;
  std::string description;  // for logs: "/dev/vport0p1 (port \"agent\")"
};

Result<Transport> open_transport(const AgentSettings& settings);
// The device path of the virtio-serial port called `name`, from sysfs under `sys_root`.
Result<std::string> find_port(const std::string& name, const std::string& sys_root = "/sys/class/virtio-ports");

}  // namespace lockroom::agent
