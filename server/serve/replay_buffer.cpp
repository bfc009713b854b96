// ReplayBuffer; see replay_buffer.h.
#include "server/serve/replay_buffer.h"

#include <algorithm>

namespace lockroom::serve {

void ReplayBuffer::output(const std::string& process_id, core::OutputStream stream, const core::OutputChunk& chunk) {
  if (chunk.empty()) return;
  std::size_t size = chunk.data.size();
  events_.push_back(ReplayEvent{ReplayEvent::Output{process_id, stream, chunk}});
  Iter it = std::prev(events_.end());
  output_order_.push_back(it);
  by_process_[process_id].push_back(it);
  process_bytes_[process_id] += size;
  kept_bytes_ += size;
  // The newest chunk always stays, even when it alone is over a bound.
  while (process_bytes_[process_id] > limits_.per_process_bytes && by_process_[process_id].size() > 1)
    drop_oldest_output_of(process_id);
  while (kept_bytes_ > limits_.per_sandbox_bytes && output_order_.size() > 1) drop_oldest_output();
}

void ReplayBuffer::exited(const std::string& process_id, const core::ProcessExit& exit) {
  events_.push_back(ReplayEvent{ReplayEvent::Exited{process_id, exit}});
}

void ReplayBuffer::state(core::SandboxState state, core::StopReason reason, const std::string& message) {
  events_.push_back(ReplayEvent{ReplayEvent::State{state, reason, message}});
}

void ReplayBuffer::limit(const core::LimitEvent& event) { events_.push_back(ReplayEvent{event}); }

void ReplayBuffer::misbehaved(const core::MisbehaviourEvent& event) { events_.push_back(ReplayEvent{event}); }

void ReplayBuffer::network(const egress::AuditRecord& record) {
  events_.push_back(ReplayEvent{ReplayEvent::Network{record}});
  network_order_.push_back(std::prev(events_.end()));
  while (network_order_.size() > limits_.max_network_events) {
    events_.erase(network_order_.front());
    network_order_.pop_front();
    dropped_network_++;
  }
}

// Removes an output event from the list and the byte counts, counting it as dropped; the
// caller has already taken it out of the order queues.
void ReplayBuffer::forget(Iter it) {
  const auto& out = std::get<ReplayEvent::Output>(it->what);
  std::size_t size = out.chunk.data.size();
  process_bytes_[out.process_id] -= size;
  kept_bytes_ -= size;
  dropped_[out.process_id] += size;
  events_.erase(it);
}

void ReplayBuffer::drop_oldest_output_of(const std::string& process_id) {
  auto& mine = by_process_[process_id];
  Iter it = mine.front();
  mine.pop_front();
  output_order_.erase(std::find(output_order_.begin(), output_order_.end(), it));
  forget(it);
}

void ReplayBuffer::drop_oldest_output() {
  Iter it = output_order_.front();
  output_order_.pop_front();
  auto& mine = by_process_[std::get<ReplayEvent::Output>(it->what).process_id];
  mine.pop_front();  // the globally oldest is also that process's oldest
  forget(it);
}

ReplayStats ReplayBuffer::stats() const {
  ReplayStats out;
  out.kept_output_bytes = kept_bytes_;
  for (const auto& [process, bytes] : dropped_) {
    out.dropped_output_bytes += bytes;
    if (bytes) out.dropped_by_process[process] = bytes;
  }
  out.dropped_network_events = dropped_network_;
  return out;
}

std::list<ReplayEvent> ReplayBuffer::take() {
  std::list<ReplayEvent> out;
  out.swap(events_);
  output_order_.clear();
  by_process_.clear();
  process_bytes_.clear();
  network_order_.clear();
  kept_bytes_ = 0;
  return out;
}

}  // namespace lockroom::serve
