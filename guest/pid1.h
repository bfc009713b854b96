// What the agent does to its own process before serving: as PID 1 in a guest, the duties of an
// init (devpts for terminals, a sane environment for children; reaping happens in the loop);
// on a host, becoming a child subreaper so orphans of its processes are still reaped by it.
// Both: SIGPIPE ignored, descriptors 0-2 open, umask 022. Called once from main().
#pragma once

#include <string>
#include <vector>

namespace lockroom::agent {

void prepare_process(bool pid1);
// The environment every started process begins with (before process.start's env).
std::vector<std::string> base_environment(bool pid1);
// /proc/cmdline, or empty.
std::string read_kernel_cmdline();

}  // namespace lockroom::agent
