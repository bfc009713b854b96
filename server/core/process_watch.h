// ProcessWatch: SandboxEvents that pass everything on, except the processes someone watches.
//
// lockroom starts some processes of its own in a sandbox (a kit's files and setup commands).
// Their output and exit belong to whoever started them, not to the editor or the terminal:
// watch() claims a process id, and its bytes and exit go to the watcher instead of `next`.
// Everything else is forwarded unchanged. Loop thread only.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "server/core/forwarding_events.h"

namespace lockroom::core {

class ProcessWatch : public ForwardingEvents {
 public:
  struct Watcher {
    std::function<void(OutputStream, std::string_view bytes)> output;
    std::function<void(const ProcessExit&)> exited;
  };

  explicit ProcessWatch(SandboxEvents& next) : ForwardingEvents(next) {}

  // Claims `process_id` until it exits. The guest answers a start before it sends the process's
  // output, so watching right after start_process's answer misses nothing.
  void watch(const std::string& process_id, Watcher watcher) { watched_[process_id] = std::move(watcher); }
  void unwatch(const std::string& process_id) { watched_.erase(process_id); }

  void process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) override {
    if (!watched_.count(process_id)) next().process_output(process_id, stream, chunk);
  }
  void process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) override;
  void process_exited(const std::string& process_id, const ProcessExit& exit) override;

 private:
  std::map<std::string, Watcher> watched_;
};

}  // namespace lockroom::core
