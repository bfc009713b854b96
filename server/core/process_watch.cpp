// ProcessWatch; see process_watch.h.
#include "server/core/process_watch.h"

namespace lockroom::core {

void ProcessWatch::process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) {
  auto it = watched_.find(process_id);
  if (it == watched_.end()) return next().process_bytes(process_id, stream, bytes);
  if (it->second.output) it->second.output(stream, bytes);
}

void ProcessWatch::process_exited(const std::string& process_id, const ProcessExit& exit) {
  auto it = watched_.find(process_id);
  if (it == watched_.end()) return next().process_exited(process_id, exit);
  Watcher watcher = std::move(it->second);
  watched_.erase(it);
  if (watcher.exited) watcher.exited(exit);
}

}  // namespace lockroom::core
