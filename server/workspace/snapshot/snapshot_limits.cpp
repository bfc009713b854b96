// Snapshot size limits and their messages (see snapshot_limits.h).
#include "server/workspace/snapshot/snapshot_limits.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace lockroom::workspace::snapshot {
namespace {

constexpr std::size_t kOffendersNamed = 5;
constexpr const char* kWhatToDo =
    "Add them to .gitignore (or to the snapshot's withhold patterns) if the sandbox does not need them, "
    "or raise the limit.";

std::string with_commas(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Per directory ("a/b/"), the files (count or bytes) under it, recursively. The root is left out.
std::map<std::string, std::uint64_t> totals_per_directory(const std::vector<SizedPath>& files, bool count_bytes) {
  std::map<std::string, std::uint64_t> totals;
  for (const auto& f : files) {
    for (std::size_t slash = f.path.find('/'); slash != std::string::npos; slash = f.path.find('/', slash + 1)) {
      totals[f.path.substr(0, slash + 1)] += count_bytes ? f.bytes : 1;
    }
  }
  return totals;
}

// The directories with the largest totals, leaving out those already inside a named one (so
// "node_modules/" is named once, not once per package under it).
std::vector<std::pair<std::string, std::uint64_t>> biggest_directories(const std::vector<SizedPath>& files,
                                                                       bool count_bytes) {
  auto totals = totals_per_directory(files, count_bytes);
  std::vector<std::pair<std::string, std::uint64_t>> sorted(totals.begin(), totals.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::pair<std::string, std::uint64_t>> named;
  for (const auto& entry : sorted) {
    if (named.size() == kOffendersNamed) break;
    const std::string& dir = entry.first;  // not a structured binding: clang 14 cannot capture those
    bool inside_named = std::any_of(named.begin(), named.end(),
                                    [&](const auto& n) { return dir.compare(0, n.first.size(), n.first) == 0; });
    if (!inside_named) named.emplace_back(dir, entry.second);
  }
  return named;
}

std::vector<const SizedPath*> largest_files(const std::vector<SizedPath>& files, std::uint64_t at_least) {
  std::vector<const SizedPath*> out;
  for (const auto& f : files) {
    if (f.bytes >= at_least) out.push_back(&f);
  }
  std::stable_sort(out.begin(), out.end(), [](const SizedPath* a, const SizedPath* b) { return a->bytes > b->bytes; });
  if (out.size() > kOffendersNamed) out.resize(kOffendersNamed);
  return out;
}

std::string list_files(const std::vector<const SizedPath*>& files) {
  std::string out;
  for (const auto* f : files) {
    if (!out.empty()) out += ", ";
    out += f->path + " (" + human_bytes(f->bytes) + ")";
  }
  return out;
}

}  // namespace

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

Result<void> check_limits(const std::vector<SizedPath>& files, const SnapshotLimits& limits,
                          bool scan_stopped_early) {
  std::uint64_t total = 0;
  std::size_t too_big = 0;
  for (const auto& f : files) {
    total += f.bytes;
    if (f.bytes > limits.max_file_bytes) ++too_big;
  }

  if (too_big > 0) {
    auto offenders = largest_files(files, limits.max_file_bytes + 1);
    return make_error(ErrorCode::kLimitExceeded,
                      with_commas(too_big) + (too_big == 1 ? " file is" : " files are") + " larger than the " +
                          human_bytes(limits.max_file_bytes) + " single-file limit of a workspace snapshot: " +
                          list_files(offenders) + (too_big > offenders.size() ? ", …" : "") + ". " + kWhatToDo);
  }

  if (files.size() > limits.max_files) {
    std::string where;
    for (const auto& [dir, count] : biggest_directories(files, false)) {
      if (!where.empty()) where += ", ";
      where += dir + " (" + with_commas(count) + " files)";
    }
    return make_error(ErrorCode::kLimitExceeded,
                      "the workspace has " +
                          (scan_stopped_early ? "more than the limit of " + with_commas(limits.max_files) + " files to snapshot"
                                              : with_commas(files.size()) + " files to snapshot, more than the limit of " +
                                                    with_commas(limits.max_files)) +
                          "." +
                          (where.empty() ? std::string()
                                         : std::string(scan_stopped_early ? " Of those found before the count stopped, most are in "
                                                                          : " Most of them are in ") +
                                               where + ".") +
                          " " + kWhatToDo);
  }

  if (total > limits.max_total_bytes) {
    std::string where;
    for (const auto& [dir, bytes] : biggest_directories(files, true)) {
      if (!where.empty()) where += ", ";
      where += dir + " (" + human_bytes(bytes) + ")";
    }
    return make_error(ErrorCode::kLimitExceeded,
                      "the workspace's files add up to " + human_bytes(total) + ", more than the " +
                          human_bytes(limits.max_total_bytes) + " limit of a snapshot. The largest files are " +
                          list_files(largest_files(files, 0)) + "." +
                          (where.empty() ? std::string() : " The largest directories are " + where + ".") + " " +
                          kWhatToDo);
  }
  return {};
}

}  // namespace lockroom::workspace::snapshot
