// ManifestHistory and manifest_delta; see workspace_history.h.
#include "guest/workspace_history.h"

#include <algorithm>

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {

using Entry = channel::ManifestEntry;

bool same_version(const Entry& a, const Entry& b) { return a.mode == b.mode && a.id == b.id && a.size == b.size; }

// The entry for `path` in `entries` (sorted), or null.
template <typename Entries>
auto lookup(Entries& entries, const std::string& path) -> decltype(&entries[0]) {
  auto it = std::lower_bound(entries.begin(), entries.end(), path, [](const Entry& e, const std::string& p) { return e.path < p; });
  return it != entries.end() && it->path == path ? &*it : nullptr;
}

}  // namespace

Entry removal_record(const std::string& path) {
  Entry r;
  r.path = path;
  r.mode = channel::kModeRemoved;
  r.id = std::string(40, '0');
  r.size = 0;
  return r;
}

std::vector<Entry> manifest_delta(const std::vector<Entry>& before, const std::vector<Entry>& now) {
  std::vector<Entry> out;
  auto a = before.begin();
  auto b = now.begin();
  while (a != before.end() || b != now.end()) {
    if (b == now.end() || (a != before.end() && a->path < b->path)) {
      out.push_back(removal_record(a->path));
      ++a;
    } else if (a == before.end() || b->path < a->path) {
      out.push_back(*b++);
    } else {
      if (!same_version(*a, *b)) out.push_back(*b);
      ++a;
      ++b;
    }
  }
  return out;
}

ManifestHistory::ManifestHistory(std::size_t remembered) : remembered_(std::max<std::size_t>(remembered, 1)) {}

bool ManifestHistory::remembers(std::int64_t id) const {
  if (id == 0) return false;
  if (id == latest_id_) return true;
  // The oldest one kept is only there for answers made right after a push.
  std::size_t named = std::min(older_.size(), remembered_ - 1);
  return std::any_of(older_.end() - static_cast<std::ptrdiff_t>(named), older_.end(), [id](const Older& o) { return o.id == id; });
}

bool ManifestHistory::kept(std::int64_t id) const {
  return id != 0 && (id == latest_id_ || std::any_of(older_.begin(), older_.end(), [id](const Older& o) { return o.id == id; }));
}

const Entry* ManifestHistory::find(std::int64_t id, const std::string& path) const {
  if (!kept(id)) return nullptr;
  // From that manifest on towards the latest, the first undo record for the path is its entry.
  for (const auto& older : older_) {
    if (older.id < id) continue;
    if (const Entry* e = lookup(older.undo, path)) return e->mode == channel::kModeRemoved ? nullptr : e;
  }
  return lookup(latest_, path);
}

std::optional<std::vector<Entry>> ManifestHistory::records_since(std::int64_t id) const {
  if (!kept(id)) return std::nullopt;
  std::vector<Entry> out;
  if (id == latest_id_) return out;
  // Only paths some undo record names can differ.
  std::vector<const std::string*> paths;
  for (const auto& older : older_)
    if (older.id >= id)
      for (const auto& e : older.undo) paths.push_back(&e.path);
  std::sort(paths.begin(), paths.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  paths.erase(std::unique(paths.begin(), paths.end(), [](const std::string* a, const std::string* b) { return *a == *b; }), paths.end());
  for (const std::string* path : paths) {
    const Entry* then = find(id, *path);
    const Entry* now = lookup(latest_, *path);
    if (!now) {
      if (then) out.push_back(removal_record(*path));
    } else if (!then || !same_version(*then, *now)) {
      out.push_back(*now);
    }
  }
  return out;
}

void ManifestHistory::remember_older(Older older) {
  older_.push_back(std::move(older));
  while (older_.size() > remembered_) older_.pop_front();
}

void ManifestHistory::push_whole(std::int64_t id, std::vector<Entry> entries) {
  if (!empty()) remember_older(Older{latest_id_, manifest_delta(entries, latest_)});
  latest_ = std::move(entries);
  latest_id_ = id;
}

void ManifestHistory::push_changes(std::int64_t id, const std::vector<Entry>& changes) {
  Older older{latest_id_, {}};
  bool in_place = true;  // every change replaces a listed entry: no entry moves
  for (const auto& change : changes) {
    const Entry* was = lookup(latest_, change.path);
    if (was && change.mode != channel::kModeRemoved) {
      if (!same_version(*was, change)) older.undo.push_back(*was);
    } else if (was) {
      older.undo.push_back(*was);
      in_place = false;
    } else if (change.mode != channel::kModeRemoved) {
      older.undo.push_back(removal_record(change.path));
      in_place = false;
    }
  }
  if (in_place) {
    for (const auto& change : changes)
      if (Entry* listed = lookup(latest_, change.path)) *listed = change;  // (a removal of a path not listed: nothing)
  } else {  // a merge of the two sorted lists
    std::vector<Entry> merged;
    merged.reserve(latest_.size() + changes.size());
    auto a = latest_.begin();
    auto b = changes.begin();
    while (a != latest_.end() || b != changes.end()) {
      if (b == changes.end() || (a != latest_.end() && a->path < b->path)) {
        merged.push_back(std::move(*a++));
      } else {
        if (a != latest_.end() && a->path == b->path) ++a;
        if (b->mode != channel::kModeRemoved) merged.push_back(*b);
        ++b;
      }
    }
    latest_ = std::move(merged);
  }
  if (!empty()) remember_older(std::move(older));
  latest_id_ = id;
}

void ManifestHistory::forget_all() {
  latest_.clear();
  older_.clear();
  latest_id_ = 0;
}

}  // namespace lockroom::agent
