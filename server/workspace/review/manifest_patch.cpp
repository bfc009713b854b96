// Patching a manifest view with a partial manifest (see manifest_patch.h).
#include "server/workspace/review/manifest_patch.h"

#include <algorithm>
#include <iterator>

#include "server/workspace/review/path_rules.h"

namespace lockroom::workspace::review {
namespace {

bool same_entry(const ManifestFile& a, const ManifestFile& b) { return a.mode == b.mode && git_oid_equal(&a.id, &b.id) != 0; }

const ManifestFile* find_file(const std::vector<ManifestFile>& files, std::string_view path) {
  auto it = std::lower_bound(files.begin(), files.end(), path, [](const ManifestFile& f, std::string_view p) { return f.path < p; });
  return it != files.end() && it->path == path ? &*it : nullptr;
}

}  // namespace

Result<Manifest> apply_partial_manifest(const Manifest& previous, std::vector<ManifestEntry> changes, const ManifestLimits& limits) {
  if (changes.size() > limits.max_entries)
    return make_error(ErrorCode::kLimitExceeded, "the partial manifest has " + std::to_string(changes.size()) + " records, more than the limit of " +
                                                     std::to_string(limits.max_entries) + " entries");
  for (std::size_t i = 1; i < changes.size(); ++i)
    if (!(changes[i - 1].path < changes[i].path))
      return make_error(ErrorCode::kInvalidInput, "the partial manifest lists " + printable(changes[i].path) + " after " +
                                                      printable(changes[i - 1].path) + ": paths must be sorted and unique");

  Manifest out;
  // Every new or changed entry is checked as a full manifest's would be.
  std::vector<ManifestEntry> upserts;
  std::vector<std::string> removals;
  for (auto& c : changes) {
    if (c.mode == kModeRemoved) {
      if (find_file(previous.files, c.path)) removals.push_back(std::move(c.path));
      else out.refused.push_back({c.path.empty() ? std::string("a removal") : printable(c.path), "the partial manifest removes it, but the last manifest did not list it"});
    } else {
      upserts.push_back(std::move(c));
    }
  }
  ManifestLimits per_entry = limits;
  per_entry.max_total_bytes = UINT64_MAX;  // the patched view's total is checked below
  std::vector<std::string> upsert_paths;
  upsert_paths.reserve(upserts.size());
  for (const auto& u : upserts) upsert_paths.push_back(u.path);
  auto checked = validate_manifest(std::move(upserts), per_entry);
  if (!checked) return checked.error();
  for (auto& r : checked->refused) out.refused.push_back(std::move(r));
  out.refused_paths = std::move(checked->refused_paths);
  // A refused record's path is gone from the view, as it would be from a full manifest.
  std::vector<std::string> dropped = std::move(removals);
  for (const auto& p : upsert_paths)
    if (!find_file(checked->files, p)) dropped.push_back(p);
  std::sort(dropped.begin(), dropped.end());

  // Merge: the previous view, without dropped paths, with the accepted records in place.
  std::vector<ManifestFile>& merged = out.files;
  merged.reserve(previous.files.size() + checked->files.size());
  auto prev = previous.files.begin();
  auto next = checked->files.begin();
  auto drop = dropped.begin();
  while (prev != previous.files.end() || next != checked->files.end()) {
    bool take_next = next != checked->files.end() && (prev == previous.files.end() || next->path <= prev->path);
    if (take_next) {
      if (prev != previous.files.end() && prev->path == next->path) ++prev;
      merged.push_back(std::move(*next++));
      continue;
    }
    while (drop != dropped.end() && *drop < prev->path) ++drop;
    if (drop == dropped.end() || *drop != prev->path) merged.push_back(*prev);
    ++prev;
  }

  // A record that makes a path both a file and a folder is refused (and left out).
  std::vector<std::string> conflicting;
  for (const auto& p : upsert_paths) {
    const ManifestFile* file = find_file(merged, p);
    if (!file) continue;
    std::string prefix = p + "/";
    auto child = std::lower_bound(merged.begin(), merged.end(), prefix, [](const ManifestFile& f, const std::string& x) { return f.path < x; });
    if (child != merged.end() && child->path.compare(0, prefix.size(), prefix) == 0) {
      out.refused.push_back({printable(p), "the path is listed as a file or symlink but the manifest also holds '" + printable(child->path) + "' inside it"});
      conflicting.push_back(p);
      continue;
    }
    for (std::size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1)) {
      if (find_file(merged, std::string_view(p).substr(0, slash))) {
        out.refused.push_back({printable(p), "the path is inside '" + printable(p.substr(0, slash)) + "', which the manifest lists as a file or symlink"});
        conflicting.push_back(p);
        break;
      }
    }
  }
  if (!conflicting.empty()) {
    std::sort(conflicting.begin(), conflicting.end());
    std::vector<std::string> refused_paths;
    std::set_union(out.refused_paths.begin(), out.refused_paths.end(), conflicting.begin(), conflicting.end(), std::back_inserter(refused_paths));
    out.refused_paths = std::move(refused_paths);
    std::erase_if(merged, [&](const ManifestFile& f) { return std::binary_search(conflicting.begin(), conflicting.end(), f.path); });
  }

  if (merged.size() > limits.max_entries)
    return make_error(ErrorCode::kLimitExceeded, "the workspace manifest has more than " + std::to_string(limits.max_entries) +
                                                     " entries after this change; lockroom refuses it (raise the limit or shrink the workspace)");
  std::uint64_t total = 0;
  for (const auto& f : merged) total += f.size;
  if (total > limits.max_total_bytes)
    return make_error(ErrorCode::kLimitExceeded, "the workspace manifest claims " + std::to_string(total) + " bytes in total after this change, over the limit of " +
                                                     std::to_string(limits.max_total_bytes));
  out.total_bytes = total;
  return out;
}

std::vector<PathChange> manifest_changes(const Manifest& before, const Manifest& now) {
  std::vector<PathChange> out;
  auto a = before.files.begin();
  auto b = now.files.begin();
  while (a != before.files.end() || b != now.files.end()) {
    if (b == now.files.end() || (a != before.files.end() && a->path < b->path)) {
      out.push_back({a->path, nullptr});
      ++a;
    } else if (a == before.files.end() || b->path < a->path) {
      out.push_back({b->path, &*b});
      ++b;
    } else {
      if (!same_entry(*a, *b)) out.push_back({b->path, &*b});
      ++a;
      ++b;
    }
  }
  return out;
}

}  // namespace lockroom::workspace::review
