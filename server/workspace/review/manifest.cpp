// Manifest validation and its bounded JSON reader (see manifest.h).
#include "server/workspace/review/manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "server/workspace/review/path_rules.h"

namespace lockroom::workspace::review {
namespace {

// An entry plus whatever was structurally wrong with it in the JSON (missing field, wrong type).
struct RawEntry {
  ManifestEntry entry;
  std::size_t index = 0;
  bool has_path = false;
  std::string problem;
};

std::string octal(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%06llo", static_cast<unsigned long long>(value));
  return text;
}

bool is_hex_id(std::string_view id) {
  if (id.size() != GIT_OID_HEXSZ) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

std::string display_name(const RawEntry& raw) {
  return raw.has_path && !raw.entry.path.empty() ? printable(raw.entry.path) : "entry #" + std::to_string(raw.index);
}

// The reason one entry, on its own, is refused; nullopt when it is acceptable.
std::optional<std::string> entry_problem(const RawEntry& raw, const ManifestLimits& limits) {
  if (!raw.problem.empty()) return raw.problem;
  const ManifestEntry& e = raw.entry;
  if (auto p = path_problem(e.path)) return p;
  if (e.mode != kModeFile && e.mode != kModeExecutable && e.mode != kModeSymlink) {
    return "mode " + octal(e.mode) +
           " is not a file (100644), executable (100755) or symlink (120000); devices, fifos, directories and "
           "submodules are not accepted";
  }
  if (!is_hex_id(e.id)) return "the id '" + printable(e.id, 60) + "' is not a 40-digit hex git blob id";
  if (e.size > limits.max_blob_bytes) {
    return "the file is " + std::to_string(e.size) + " bytes, over the limit of " +
           std::to_string(limits.max_blob_bytes) + " bytes for one file";
  }
  if (e.mode == kModeSymlink && e.size > kMaxPathBytes) {
    return "the symlink target is " + std::to_string(e.size) + " bytes, over the limit of " + std::to_string(kMaxPathBytes);
  }
  return std::nullopt;
}

Error too_many_entries(std::size_t limit) {
  return make_error(ErrorCode::kLimitExceeded, "the workspace manifest has more than " + std::to_string(limit) +
                                                   " entries; lockroom refuses it (raise the limit or shrink the workspace)");
}

Result<Manifest> validate_raw(std::vector<RawEntry> raws, const ManifestLimits& limits) {
  if (raws.size() > limits.max_entries) return too_many_entries(limits.max_entries);
  Manifest manifest;
  std::vector<bool> refused(raws.size(), false);
  std::vector<std::string> reasons(raws.size());
  auto refuse = [&](std::size_t i, std::string reason) {
    if (refused[i]) return;
    refused[i] = true;
    reasons[i] = std::move(reason);
  };

  for (std::size_t i = 0; i < raws.size(); ++i) {
    if (auto problem = entry_problem(raws[i], limits)) refuse(i, *problem);
  }

  // The entries that have a path, in path order: duplicates are neighbours there, and everything
  // under "P/" is one run that starts where "P/" would be.
  std::vector<std::size_t> order;
  order.reserve(raws.size());
  for (std::size_t i = 0; i < raws.size(); ++i) {
    if (raws[i].has_path) order.push_back(i);
  }
  auto path_of = [&](std::size_t i) -> std::string_view { return raws[i].entry.path; };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    std::string_view x = path_of(a), y = path_of(b);
    return x != y ? x < y : a < b;
  });

  // Duplicates: every copy is refused, since lockroom cannot know which one the guest meant.
  for (std::size_t run = 0; run < order.size();) {
    std::size_t end = run + 1;
    while (end < order.size() && path_of(order[end]) == path_of(order[run])) ++end;
    for (std::size_t k = run; end - run > 1 && k < end; ++k) {
      refuse(order[k], "the path appears " + std::to_string(end - run) + " times in the manifest");
    }
    run = end;
  }

  // A path that is a file (or symlink) and also a directory holding other entries: both refused.
  std::string dir_prefix;
  for (std::size_t k = 0; k < order.size(); ++k) {
    std::string_view path = path_of(order[k]);
    if (k > 0 && path == path_of(order[k - 1])) continue;
    dir_prefix.assign(path);
    dir_prefix += '/';
    auto child = std::lower_bound(order.begin() + static_cast<std::ptrdiff_t>(k) + 1, order.end(), dir_prefix,
                                  [&](std::size_t i, const std::string& p) { return path_of(i) < p; });
    if (child == order.end() || path_of(*child).substr(0, dir_prefix.size()) != dir_prefix) continue;
    std::string first_child = printable(path_of(*child));
    for (; child != order.end() && path_of(*child).substr(0, dir_prefix.size()) == dir_prefix; ++child) {
      refuse(*child, "the path is inside '" + printable(path) + "', which the manifest also lists as a file or symlink");
    }
    for (std::size_t same = k; same < order.size() && path_of(order[same]) == path; ++same) {
      refuse(order[same], "the path is listed as a file or symlink and also as a directory holding '" + first_child + "'");
    }
  }

  for (std::size_t i = 0; i < raws.size(); ++i) {
    if (!refused[i]) continue;
    manifest.refused.push_back({display_name(raws[i]), reasons[i]});
    if (raws[i].has_path && !path_problem(raws[i].entry.path)) manifest.refused_paths.push_back(raws[i].entry.path);
  }
  std::sort(manifest.refused_paths.begin(), manifest.refused_paths.end());
  manifest.refused_paths.erase(std::unique(manifest.refused_paths.begin(), manifest.refused_paths.end()), manifest.refused_paths.end());
  for (std::size_t i : order) {
    if (refused[i]) continue;
    ManifestFile file;
    file.path = std::move(raws[i].entry.path);
    file.mode = raws[i].entry.mode;
    file.size = raws[i].entry.size;
    git_oid_fromstrn(&file.id, raws[i].entry.id.data(), raws[i].entry.id.size());
    manifest.files.push_back(std::move(file));
  }

  std::uint64_t total = 0;
  for (const ManifestFile& f : manifest.files) total += f.size;  // each <= max_blob_bytes: no overflow
  if (total > limits.max_total_bytes) {
    std::vector<const ManifestFile*> largest;
    for (const ManifestFile& f : manifest.files) largest.push_back(&f);
    std::size_t shown = std::min<std::size_t>(3, largest.size());
    std::partial_sort(largest.begin(), largest.begin() + shown, largest.end(),
                      [](const ManifestFile* a, const ManifestFile* b) { return a->size > b->size; });
    std::string names;
    for (std::size_t k = 0; k < shown; ++k) {
      names += (k ? ", " : "") + printable(largest[k]->path) + " (" + std::to_string(largest[k]->size) + " bytes)";
    }
    return make_error(ErrorCode::kLimitExceeded, "the workspace manifest claims " + std::to_string(total) +
                                                     " bytes in total, over the limit of " +
                                                     std::to_string(limits.max_total_bytes) + "; largest: " + names);
  }
  manifest.total_bytes = total;
  return manifest;
}

// A SAX reader that builds RawEntry values directly and stops at the entry bound, so a huge
// manifest costs no memory beyond the bound.
class ManifestReader {
 public:
  using json = nlohmann::json;
  explicit ManifestReader(std::size_t max_entries) : max_entries_(max_entries) {}

  std::vector<RawEntry> entries;
  bool too_many = false;
  std::string error;

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(json::number_integer_t v) {
    if (v < 0) return scalar("a negative number");
    return number_unsigned(static_cast<json::number_unsigned_t>(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (!in_field()) return scalar("a number");
    if (key_ == "size") {
      current().entry.size = v;
      seen_size_ = true;
    } else if (key_ == "mode") {
      current().entry.mode = v > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<std::uint32_t>(v);
      seen_mode_ = true;
    } else if (key_ == "path" || key_ == "id") {
      wrong_type("a number");
    }
    return true;
  }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar("a fractional number"); }
  bool binary(json::binary_t&) { return scalar("binary data"); }
  bool string(json::string_t& s) {
    if (!in_field()) return scalar("a string");
    RawEntry& raw = current();
    if (key_ == "path") {
      raw.entry.path = std::move(s);
      raw.has_path = true;
    } else if (key_ == "id") {
      raw.entry.id = std::move(s);
      seen_id_ = true;
    } else if (key_ == "mode") {
      seen_mode_ = true;
      std::uint32_t mode = 0;
      bool ok = !s.empty() && s.size() <= 7;
      for (char c : s) {
        if (c < '0' || c > '7') ok = false;
        mode = mode * 8 + static_cast<std::uint32_t>(c - '0');
      }
      if (ok) raw.entry.mode = mode;
      else note("the mode '" + printable(s, 20) + "' is not an octal number");
    } else if (key_ == "size") {
      wrong_type("a string");
    }
    return true;
  }
  bool start_object(std::size_t) {
    ++depth_;
    if (depth_ == 1) return fail("the workspace manifest must be a JSON array of entries, not an object");
    if (depth_ == 2) {
      if (!begin_entry()) return false;
      seen_id_ = seen_mode_ = seen_size_ = false;
      return true;
    }
    if (depth_ == 3 && known_key()) wrong_type("an object");
    return true;
  }
  bool key(json::string_t& k) {
    if (depth_ == 2) key_ = std::move(k);
    return true;
  }
  bool end_object() {
    if (depth_ == 2 && in_entry_) {
      RawEntry& raw = current();
      if (!raw.has_path) note("the entry has no \"path\"");
      else if (!seen_mode_) note("the entry has no \"mode\"");
      else if (!seen_id_) note("the entry has no \"id\"");
      else if (!seen_size_) note("the entry has no \"size\"");
      in_entry_ = false;
    }
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    ++depth_;
    if (depth_ == 1) {
      saw_array_ = true;
      return true;
    }
    if (depth_ == 2) {
      if (!begin_entry()) return false;
      note("the entry is an array, not an object");
      in_entry_ = false;
    } else if (depth_ == 3 && known_key()) {
      wrong_type("an array");
    }
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    return fail("the workspace manifest is not valid JSON (at byte " + std::to_string(position) + "): " + e.what());
  }
  bool saw_array() const { return saw_array_; }

 private:
  bool in_field() const { return depth_ == 2 && in_entry_; }
  bool known_key() const { return in_entry_ && (key_ == "path" || key_ == "mode" || key_ == "id" || key_ == "size"); }
  RawEntry& current() { return entries.back(); }
  void note(std::string problem) {
    if (current().problem.empty()) current().problem = std::move(problem);
  }
  void wrong_type(const char* what) { note("the field \"" + printable(key_, 40) + "\" is " + what + ", which it may not be"); }
  bool fail(std::string message) {
    if (error.empty()) error = std::move(message);
    return false;
  }
  // A scalar where an entry or field should be.
  bool scalar(const char* what) {
    if (depth_ == 0) return fail("the workspace manifest must be a JSON array of entries");
    if (depth_ == 1) {
      if (!begin_entry()) return false;
      note(std::string("the entry is ") + what + ", not an object");
      in_entry_ = false;
      return true;
    }
    if (in_field() && known_key()) wrong_type(what);
    return true;
  }
  bool begin_entry() {
    if (entries.size() >= max_entries_) {
      too_many = true;
      return false;
    }
    RawEntry raw;
    raw.index = entries.size();
    entries.push_back(std::move(raw));
    in_entry_ = true;
    key_.clear();
    return true;
  }

  std::size_t max_entries_;
  int depth_ = 0;
  bool in_entry_ = false;
  bool saw_array_ = false;
  bool seen_id_ = false, seen_mode_ = false, seen_size_ = false;
  std::string key_;
};

}  // namespace

Result<Manifest> validate_manifest(std::vector<ManifestEntry> entries, const ManifestLimits& limits) {
  if (entries.size() > limits.max_entries) return too_many_entries(limits.max_entries);
  std::vector<RawEntry> raws;
  raws.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    RawEntry raw;
    raw.entry = std::move(entries[i]);
    raw.index = i;
    raw.has_path = true;
    raws.push_back(std::move(raw));
  }
  return validate_raw(std::move(raws), limits);
}

Result<Manifest> parse_manifest_json(std::string_view json, const ManifestLimits& limits) {
  ManifestReader reader(limits.max_entries);
  bool parsed = nlohmann::json::sax_parse(json, &reader);
  if (reader.too_many) return too_many_entries(limits.max_entries);
  if (!parsed || !reader.error.empty()) {
    return make_error(ErrorCode::kInvalidInput,
                      reader.error.empty() ? "the workspace manifest is not valid JSON" : reader.error);
  }
  if (!reader.saw_array()) return make_error(ErrorCode::kInvalidInput, "the workspace manifest must be a JSON array of entries");
  return validate_raw(std::move(reader.entries), limits);
}

}  // namespace lockroom::workspace::review
