// The workspace.* methods; see workspace_service.h.
#include "guest/workspace_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "guest/guest_user.h"
#include "guest/log.h"
#include "guest/workspace_checkout.h"
#include "guest/workspace_fast_sync.h"
#include "guest/workspace_git.h"
#include "guest/workspace_index.h"
#include "guest/workspace_inline.h"
#include "guest/workspace_manifest.h"
#include "guest/workspace_history.h"
#include "guest/workspace_ignore.h"
#include "guest/workspace_manifest_delta.h"
#include "guest/write_all.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

namespace {

std::optional<RpcError> make_dirs(const std::string& path) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return errno_error(errno, "workspace.import: creating " + dir);
    if (slash == std::string::npos) break;
  }
  return std::nullopt;
}

// Replaces <root>/.git/info/exclude with `text` (a temporary file renamed over it). The checkout
// it follows stands either way: a failure is only logged.
void write_exclude(const std::string& root, const std::string& text) {
  std::string info = root + "/.git/info", file = info + "/exclude", temp = file + ".lockroom-tmp";
  if (::mkdir(info.c_str(), 0755) != 0 && errno != EEXIST) return log_debug("workspace.checkout: cannot make " + info + ": " + std::strerror(errno));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return log_debug("workspace.checkout: cannot write " + temp + ": " + std::strerror(errno));
  bool written = write_all(fd, text);
  ::close(fd);
  if (!written || ::rename(temp.c_str(), file.c_str()) != 0) {
    log_debug("workspace.checkout: cannot write " + file + ": " + std::strerror(errno));
    ::unlink(temp.c_str());
  }
}

}  // namespace

WorkspaceService::WorkspaceService(Connection& connection) : connection_(connection) {}
WorkspaceService::~WorkspaceService() = default;

WorkspaceService::Workspace& WorkspaceService::workspace(const std::string& path, std::size_t cache_entries) {
  auto it = workspaces_.find(path);
  if (it != workspaces_.end()) return *it->second;
  if (workspaces_.size() >= kMaxWorkspaces) workspaces_.erase(workspaces_.begin());  // a cache: forgetting one costs only time
  return *workspaces_.emplace(path, std::make_unique<Workspace>(cache_entries)).first->second;
}

Outcome WorkspaceService::start(std::unique_ptr<WorkspaceTransfer> transfer, const char* method, std::uint32_t& stream) {
  if (transfers_.size() >= kMaxTransfers)
    return make_rpc_error(agent_error::kLimitReached, std::string(method) + ": " + std::to_string(transfers_.size()) + " workspace transfers are already running");
  auto opened = connection_.open_stream(transfer.get());
  if (!opened) return make_rpc_error(agent_error::kLimitReached, std::string(method) + ": " + opened.error().message);
  stream = *opened;
  transfer->set_stream(stream);
  transfers_[stream] = std::move(transfer);
  return json();
}

Outcome WorkspaceService::import(const json& params) {
  auto p = channel::parse_workspace_import_params(params);
  if (!p) return invalid_params(p.error());
  ActAs owner(default_user());  // the workspace and its .git belong to the user its programs run as
  if (auto error = make_dirs(p->path)) return *error;
  channel::WorkspaceImportResult result;
  struct stat st{};
  if (::stat((p->path + "/.git").c_str(), &st) != 0) {
    auto init = run_git(p->path, {"init", "-q"});
    if (!init) return make_rpc_error(agent_error::kIoError, "workspace.import: " + init.error().message);
    if (!init->ok()) return make_rpc_error(agent_error::kIoError, "workspace.import: git init in " + p->path + " failed: " + init->problem());
    result.created = true;
  }
  std::string temp = p->path + "/.git/lockroom-import-" + std::to_string(::getpid()) + "-" + std::to_string(next_import_++) + ".pack";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error(errno, "workspace.import: " + temp);
  auto receiver = std::make_unique<PackReceiver>(connection_, p->path, temp, fd, p->size);
  auto started = start(std::move(receiver), channel::method::kWorkspaceImport, result.stream);
  if (std::holds_alternative<RpcError>(started)) return started;  // the receiver removed its file
  return channel::to_json(result);
}

Outcome WorkspaceService::checkout(const json& params) {
  auto p = channel::parse_workspace_checkout_params(params);
  if (!p) return invalid_params(p.error());
  ActAs owner(default_user());
  Workspace& ws = workspace(p->path, static_cast<std::size_t>(channel::WorkspaceBounds{}.max_entries));
  Outcome out;
  // A sync of a few paths is done here without git; its cache already knows the files it wrote.
  std::optional<Outcome> fast;
  if (p->base) {
    FastSyncStats stats;
    if ((fast = fast_sync(*p, ws.cache, &stats)))
      log_debug("workspace.checkout: " + p->path + ": " + std::to_string(stats.changed) + " path(s) changed, " + std::to_string(stats.written) +
                " written, without git, in " + std::to_string(stats.ms) + " ms");
  }
  // Otherwise git's index knows every file git wrote: the manifest takes their ids from it.
  out = fast ? std::move(*fast) : checkout_workspace(*p);
  if (p->exclude && !std::holds_alternative<RpcError>(out)) write_exclude(p->path, *p->exclude);
  // Watched from the first checkout on (a sync's writes are then seen like any other). What the
  // checkout wrote is the host's: not worth hashing early.
  if (!std::holds_alternative<RpcError>(out) && !ws.watch.running() && !ws.watch.start(p->path))
    log_debug("workspace.checkout: no inotify for " + p->path + ": every manifest lists every file");
  ws.watch.drain();
  ws.watch.take_closed();
  ws.eager.clear();
  note_seen(p->path, ws);  // a sync changed the files: told like any change
  return out;
}

Outcome WorkspaceService::manifest(const json& params) {
  const std::int64_t began = monotonic_ns();
  auto p = channel::parse_workspace_manifest_params(params);
  if (!p) return invalid_params(p.error());
  Workspace& ws = workspace(p->path, static_cast<std::size_t>(p->bounds.max_entries));
  // Against a manifest the host holds: only what differs from it, with the content of the files
  // read for it when the host asked for that.
  const bool since = p->since && ws.history.remembers(*p->since);
  std::optional<channel::InlineBounds> capture;
  if (since) capture = p->inline_content;
  if (p->inline_content)  // what the next one will likely ask: the bytes of files hashed early are kept for it
    ws.eager.keep_bytes(static_cast<std::uint64_t>(p->inline_content->max_file_bytes), static_cast<std::uint64_t>(p->inline_content->max_total_bytes));
  // Only the files written since the latest manifest, when the watch saw nothing else happen.
  WorkspaceWatch::Changes seen;
  if (ws.watch.running()) {
    seen = ws.watch.take();
    ws.watch.take_closed();  // written before this manifest: it reads them
  }
  EarlierHashes earlier = ws.eager.take(seen);
  // What the watch saw, when that is only files written, come or gone: applied to the latest.
  std::optional<std::variant<Manifest, RpcError>> built;
  if (!seen.relist && !ws.relist && !ws.history.empty()) {
    const std::string root = p->path;
    WatchedNames names{seen.dirty, seen.touched, [root](const std::vector<std::string>& paths) {
                         auto ignored = ignored_paths(root, paths);
                         if (!ignored) log_debug("workspace.manifest: " + root + ": " + ignored.error().message + "; listing every file instead");
                         return ignored;
                       }};
    bool relist = false;
    built = update_manifest(p->path, p->bounds, ws.cache, ws.history.latest(), names, capture, &earlier, &relist);
    if (relist) built.reset();
  }
  if (!built) built = build_manifest(p->path, p->bounds, ws.cache, ws.listing, capture, &earlier);
  // A refused manifest is not remembered, and the files written before it are no longer in the
  // watch's hands: the next one lists everything.
  ws.relist = std::holds_alternative<RpcError>(*built);
  if (auto* error = std::get_if<RpcError>(&*built)) return *error;
  Manifest& m = std::get<Manifest>(*built);

  channel::WorkspaceManifestResult result;
  result.manifest = next_manifest_++;
  if (m.changes_only) {
    ws.history.push_changes(result.manifest, m.entries);
  } else {
    ws.history.push_whole(result.manifest, std::move(m.entries));
  }
  // What workspace.export indexes: these records (a partial manifest) or the whole latest.
  ws.partial_records.clear();
  if (since) {
    ws.partial_records = std::move(*ws.history.records_since(*p->since));  // remembered before the push: still kept
    result.since = *p->since;
  }
  ws.manifest = result.manifest;
  ws.manifest_partial = since;
  const std::vector<channel::ManifestEntry>& records = since ? ws.partial_records : ws.history.latest();
  std::int64_t upserts = 0, bytes = 0;
  for (const auto& e : records)
    if (e.mode != channel::kModeRemoved) {
      upserts++;
      if (e.size <= channel::max_entry_size(e.mode, p->bounds)) bytes += static_cast<std::int64_t>(e.size);
    }
  result.entries = static_cast<std::int64_t>(records.size());
  result.bytes = bytes;
  result.hashed = std::min(m.hashed, upserts);
  result.cached = std::min(m.cached, upserts - result.hashed);
  result.skipped = m.skipped;
  std::string body;
  for (const auto& e : records) channel::append_manifest_record(body, e);
  if (capture) {
    const std::int64_t before = *p->since;
    auto base_of = [&ws, before](const std::string& path) { return ws.history.find(before, path); };
    append_inline_contents(body, records, m.captured, *capture, base_of, ws.sent, result);
  }
  result.body = static_cast<std::int64_t>(body.size());
  result.agent_ms = (monotonic_ns() - began) / 1'000'000;
  if (body.size() <= channel::kMaxInlineManifest) {
    result.data = std::move(body);
    return channel::to_json(result);
  }
  auto started = start(std::make_unique<BufferSender>(connection_, std::move(body)), channel::method::kWorkspaceManifest, result.stream);
  if (std::holds_alternative<RpcError>(started)) return started;
  return channel::to_json(result);
}

Outcome WorkspaceService::export_files(const json& params) {
  auto p = channel::parse_workspace_export_params(params);
  if (!p) return invalid_params(p.error());
  const std::string what = "workspace.export: " + p->path;
  auto it = workspaces_.find(p->path);
  if (it == workspaces_.end() || it->second->manifest == 0)
    return make_rpc_error(agent_error::kNotFound, what + " has no manifest; call workspace.manifest first");
  Workspace& ws = *it->second;
  if (ws.manifest != p->manifest)
    return make_rpc_error(agent_error::kNotFound, what + ": manifest " + std::to_string(p->manifest) + " is not the latest (" +
                                                      std::to_string(ws.manifest) + "); take a new manifest");
  const std::vector<channel::ManifestEntry>& records = ws.manifest_partial ? ws.partial_records : ws.history.latest();
  std::vector<ExportSender::Item> items;
  for (std::int64_t index : p->entries) {
    if (index >= static_cast<std::int64_t>(records.size()))
      return make_rpc_error(protocol::rpc_error::kInvalidParams, "invalid params: \"entries\" names entry " + std::to_string(index) +
                                                                      " of a manifest with " + std::to_string(records.size()));
    items.push_back({static_cast<std::uint32_t>(index), records[static_cast<std::size_t>(index)].path});
  }
  int dir = ::open(p->path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return errno_error(errno, what);
  channel::WorkspaceExportResult result;
  result.count = static_cast<std::int64_t>(items.size());
  auto started = start(std::make_unique<ExportSender>(connection_, dir, std::move(items), p->bounds.max_file_bytes, p->bounds.max_total_bytes), channel::method::kWorkspaceExport, result.stream);
  if (std::holds_alternative<RpcError>(started)) return started;
  return channel::to_json(result);
}

void WorkspaceService::note_seen(const std::string& path, Workspace& ws) {
  if (ws.watch.take_seen() && ws.notice.changed(std::chrono::steady_clock::now()) && on_changed_) on_changed_(path);
}

int WorkspaceService::timeout_ms(std::chrono::steady_clock::time_point now) const {
  int timeout = -1;
  for (const auto& [path, ws] : workspaces_)
    if (auto due = ws->notice.due_in(now)) {
      int ms = static_cast<int>(due->count());
      timeout = timeout < 0 ? ms : std::min(timeout, ms);
    }
  return timeout;
}

void WorkspaceService::pump() {
  auto now = std::chrono::steady_clock::now();
  for (auto& [path, ws] : workspaces_) {
    if (ws->eager.pending()) ws->eager.work(path, ws->watch.events(), kEagerSliceNs);
    if (ws->notice.due(now) && on_changed_) on_changed_(path);
  }
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    it->second->pump();
    if (it->second->done()) {
      it = transfers_.erase(it);
    } else {
      ++it;
    }
  }
}

bool WorkspaceService::ready() const {
  return std::any_of(transfers_.begin(), transfers_.end(), [](const auto& t) { return t.second->ready() || t.second->done(); }) ||
         std::any_of(workspaces_.begin(), workspaces_.end(), [](const auto& w) { return w.second->eager.pending(); });
}

void WorkspaceService::add_polls(PollSet& set) {
  for (auto& [path, ws] : workspaces_) {
    if (!ws->watch.running()) continue;
    // Looked up again when it fires: a request earlier in the same turn may have dropped it.
    set.add(ws->watch.fd(), POLLIN, [this, path = path](short) {
      auto it = workspaces_.find(path);
      if (it == workspaces_.end()) return;
      it->second->watch.drain();
      it->second->eager.queue(it->second->watch.take_closed());
      note_seen(path, *it->second);
    });
  }
}

void WorkspaceService::abandon_all() {
  for (auto& [id, transfer] : transfers_) transfer->on_stream_reset(id, channel::reset_code::kCancelled, "session lost");
  transfers_.clear();
}

}  // namespace lockroom::agent
