// ProcessWatch; see process_watch.h.
#include "server/core/process_watch.h"

#include <iterator>

#include <spdlog/spdlog.h>

namespace lockroom::core {

ProcessWatch::Held* ProcessWatch::held_for(const std::string& process_id) {
  auto it = held_process_.find(process_id);
  if (it == held_process_.end()) return nullptr;
  auto h = held_.find(it->second);
  return h == held_.end() ? nullptr : &h->second;
}

void ProcessWatch::release(const std::string& sandbox_id) {
  auto it = held_.find(sandbox_id);
  if (it == held_.end()) return;
  Held held = std::move(it->second);
  held_.erase(it);
  for (auto p = held_process_.begin(); p != held_process_.end();) p = p->second == sandbox_id ? held_process_.erase(p) : std::next(p);
  if (held.dropped) spdlog::warn("{}: {} bytes of output written before the create answered were dropped (over {} held)", sandbox_id,
                                 held.dropped, kMaxHeldBytes);
  for (auto& event : held.events) event(next());
}

void ProcessWatch::drop(const std::string& sandbox_id) {
  held_.erase(sandbox_id);
  for (auto p = held_process_.begin(); p != held_process_.end();) p = p->second == sandbox_id ? held_process_.erase(p) : std::next(p);
}

void ProcessWatch::process_started(const ProcessInfo& info) {
  auto it = held_.find(info.sandbox_id);
  if (it == held_.end() || watched_.count(info.process_id)) return next().process_started(info);
  held_process_[info.process_id] = info.sandbox_id;
  it->second.events.push_back([info](SandboxEvents& e) { e.process_started(info); });
}

void ProcessWatch::process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) {
  if (watched_.count(process_id)) return;
  Held* held = held_for(process_id);
  if (!held) return next().process_output(process_id, stream, chunk);
  if (held->bytes + chunk.data.size() > kMaxHeldBytes) {
    held->dropped += chunk.data.size();
    return;
  }
  held->bytes += chunk.data.size();
  held->events.push_back([process_id, stream, chunk](SandboxEvents& e) { e.process_output(process_id, stream, chunk); });
}

void ProcessWatch::process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) {
  auto it = watched_.find(process_id);
  if (it != watched_.end()) {
    if (it->second.output) it->second.output(stream, bytes);
    return;
  }
  Held* held = held_for(process_id);
  if (!held) return next().process_bytes(process_id, stream, bytes);
  if (held->bytes + bytes.size() > kMaxHeldBytes) return;  // counted (or dropped) with its process_output, which follows
  held->events.push_back([process_id, stream, copy = std::string(bytes)](SandboxEvents& e) { e.process_bytes(process_id, stream, copy); });
}

void ProcessWatch::process_exited(const std::string& process_id, const ProcessExit& exit) {
  auto it = watched_.find(process_id);
  if (it != watched_.end()) {
    Watcher watcher = std::move(it->second);
    watched_.erase(it);
    if (watcher.exited) watcher.exited(exit);
    return;
  }
  Held* held = held_for(process_id);
  if (!held) return next().process_exited(process_id, exit);
  held->events.push_back([process_id, exit](SandboxEvents& e) { e.process_exited(process_id, exit); });
}

}  // namespace lockroom::core
