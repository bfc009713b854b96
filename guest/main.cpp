// lockroom-agent: the program that serves the host inside every guest (protocol/channel.md).
//
// In a guest it is PID 1 (exec'd by the initramfs /init) and serves the virtio-serial port named
// on the kernel command line; it never exits. On a host (tests) it serves a unix socket
// (--connect) or an inherited descriptor (--fd) and exits when that closes.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "guest/agent.h"
#include "guest/guest_user.h"
#include "guest/log.h"
#include "guest/pid1.h"
#include "guest/settings.h"
#include "guest/transport.h"

using namespace lockroom::agent;

namespace {

bool has_transport_flag(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--port" || a == "--port-name" || a == "--connect" || a == "--fd") return true;
  return false;
}

int serve(const AgentSettings& settings, bool pid1) {
  int attempts = 0;
  for (;;) {
    auto transport = open_transport(settings);
    if (!transport) {
      bool retry = pid1 || settings.transport == TransportKind::kPortName;
      if (!retry) {
        log_error(transport.error().message);
        return 1;
      }
      // The port may appear a little after the driver loads; as PID 1, wait for it forever.
      if (attempts++ % 50 == 0) log_warn(transport.error().message + " (retrying)");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    log_info("serving " + transport->description);
    Agent agent(settings, std::move(*transport), pid1);
    int status = agent.run();
    if (!pid1) return status;
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool pid1 = ::getpid() == 1;
  std::vector<std::string> args(argv + 1, argv + argc);
  AgentSettings settings;
  if (pid1 || !has_transport_flag(args)) apply_kernel_cmdline(read_kernel_cmdline(), settings);
  if (auto applied = apply_flags(args, settings); !applied) {
    std::fprintf(stderr, "lockroom-agent: %s\n", applied.error().message.c_str());
    if (!pid1) return 2;
  }
  if (settings.show_version) {
    std::printf("lockroom-agent %s\n", LOCKROOM_VERSION);
    return 0;
  }
  if (settings.show_help) {
    std::printf("%s\n", usage().c_str());
    return 0;
  }
  set_log_level(settings.log_level);
  prepare_process(pid1);
  if (pid1) enable_user_switching();  // programs run as the unprivileged `agent` unless they ask for root
  for (;;) {
    try {
      return serve(settings, pid1);
    } catch (const std::exception& e) {
      log_error(std::string("the agent failed: ") + e.what());
      if (!pid1) return 1;
    }
  }
}
