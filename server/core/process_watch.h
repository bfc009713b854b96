// ProcessWatch: SandboxEvents that pass everything on, except the processes someone watches,
// and the processes of sandboxes someone holds.
//
// lockroom starts some processes of its own in a sandbox (a kit's files and setup commands).
// Their output and exit belong to whoever started them, not to the editor or the terminal:
// watch() claims a process id, and its bytes and exit go to the watcher instead of `next`.
// hold() holds back every other process event of a sandbox (started, output, exit) until
// release() passes them on in order, or drop() forgets them: a create holds its sandbox until it
// has answered, so that a kit service is never heard of before the answer that names it. What is
// held is bounded (kMaxHeldBytes of output per sandbox; beyond it output is dropped and the
// release says how much in a log line). Everything else is forwarded unchanged. Loop thread only.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/core/forwarding_events.h"

namespace lockroom::core {

class ProcessWatch : public ForwardingEvents {
 public:
  struct Watcher {
    std::function<void(OutputStream, std::string_view bytes)> output;
    std::function<void(const ProcessExit&)> exited;
  };
  static constexpr std::size_t kMaxHeldBytes = 1u << 20;

  explicit ProcessWatch(SandboxEvents& next) : ForwardingEvents(next) {}

  // Claims `process_id` until it exits. The guest answers a start before it sends the process's
  // output, so watching right after start_process's answer misses nothing.
  void watch(const std::string& process_id, Watcher watcher) { watched_[process_id] = std::move(watcher); }
  void unwatch(const std::string& process_id) { watched_.erase(process_id); }

  // Holds the process events of `sandbox_id`'s processes (from their process_started on).
  void hold(const std::string& sandbox_id) { held_[sandbox_id]; }
  // Passes what was held on, in order, and stops holding.
  void release(const std::string& sandbox_id);
  // Forgets what was held, and stops holding.
  void drop(const std::string& sandbox_id);

  void process_started(const ProcessInfo& info) override;
  void process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) override;
  void process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) override;
  void process_exited(const std::string& process_id, const ProcessExit& exit) override;

 private:
  struct Held {
    std::vector<std::function<void(SandboxEvents&)>> events;
    std::size_t bytes = 0;
    std::size_t dropped = 0;
  };
  // The hold that `process_id` belongs to, if any.
  Held* held_for(const std::string& process_id);

  std::map<std::string, Watcher> watched_;
  std::map<std::string, Held> held_;                   // by sandbox id
  std::map<std::string, std::string> held_process_;    // process id -> sandbox id, while held
};

}  // namespace lockroom::core
