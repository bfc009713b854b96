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

#include "server/core/sandbox_events.h"

namespace lockroom::core {

class ProcessWatch : public SandboxEvents {
 public:
  struct Watcher {
    std::function<void(OutputStream, std::string_view bytes)> output;
    std::function<void(const ProcessExit&)> exited;
  };

  explicit ProcessWatch(SandboxEvents& next) : next_(next) {}

  // Claims `process_id` until it exits. The guest answers a start before it sends the process's
  // output, so watching right after start_process's answer misses nothing.
  void watch(const std::string& process_id, Watcher watcher) { watched_[process_id] = std::move(watcher); }
  void unwatch(const std::string& process_id) { watched_.erase(process_id); }

  void state_changed(const std::string& sandbox_id, SandboxState state, StopReason reason, const std::string& message) override {
    next_.state_changed(sandbox_id, state, reason, message);
  }
  void process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) override {
    if (!watched_.count(process_id)) next_.process_output(process_id, stream, chunk);
  }
  void process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) override;
  void process_exited(const std::string& process_id, const ProcessExit& exit) override;
  void limit_reached(const std::string& sandbox_id, const LimitEvent& event) override { next_.limit_reached(sandbox_id, event); }
  void network_event(const std::string& sandbox_id, const egress::AuditRecord& record) override {
    next_.network_event(sandbox_id, record);
  }
  void approve_network(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) override {
    next_.approve_network(sandbox_id, question, std::move(reply));
  }

 private:
  SandboxEvents& next_;
  std::map<std::string, Watcher> watched_;
};

}  // namespace lockroom::core
