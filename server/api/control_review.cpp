// `lockroom diff` and `lockroom apply` over a control socket; see control_review.h.
#include "server/api/control_review.h"

#include <algorithm>
#include <map>

#include "protocol/channel/base64.h"

namespace lockroom::api {

using protocol::json;

namespace {

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kCyan = "\x1b[36m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kRed = "\x1b[31m";
constexpr const char* kReset = "\x1b[m";

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::size_t count(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<std::size_t>() : 0;
}

// The `files` array of an answer (empty when the answer has none).
std::vector<json> files_of(const json& answer) {
  std::vector<json> out;
  if (auto it = answer.find("files"); it != answer.end() && it->is_array())
    for (const auto& f : *it)
      if (f.is_object() && !str(f, "path").empty()) out.push_back(f);
  return out;
}

bool file_selected(const json& file, const std::vector<std::string>& paths) {
  return path_selected(str(file, "path"), paths) || (!str(file, "oldPath").empty() && path_selected(str(file, "oldPath"), paths));
}

std::string plural(std::size_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Pathspecs that match none of `files`, each with a note on `err`. True when all matched.
bool report_unmatched(const std::vector<json>& files, const std::vector<std::string>& paths, std::ostream& err) {
  bool all = true;
  for (const auto& p : paths) {
    bool any = std::any_of(files.begin(), files.end(), [&](const json& f) { return file_selected(f, {p}); });
    if (!any) {
      err << "lockroom: no changes under '" << p << "'\n";
      all = false;
    }
  }
  return all;
}

void report_refused(const json& answer, std::ostream& err) {
  auto it = answer.find("refused");
  if (it == answer.end() || !it->is_array() || it->empty()) return;
  err << "lockroom: the sandbox also reported " << plural(it->size(), "entry") << " lockroom refused (a misbehaving guest):\n";
  for (const auto& r : *it)
    if (r.is_object()) err << "  " << str(r, "path") << ": " << str(r, "reason") << "\n";
}

// changes/list for the client's sandbox: a fresh view, which is also what apply then acts on.
Result<json> list_changes(ControlClient& client, std::chrono::milliseconds timeout) {
  return client.call("changes/list", json{{"sandboxId", client.sandbox_id()}}, timeout);
}

std::string stat_name(const json& f) {
  std::string old_path = str(f, "oldPath");
  return old_path.empty() ? str(f, "path") : old_path + " => " + str(f, "path");
}

int print_stat(const std::vector<json>& files, bool color, std::ostream& out) {
  std::vector<StatLine> lines;
  for (const auto& f : files)
    lines.push_back(StatLine{stat_name(f), count(f, "added"), count(f, "removed"), flag(f, "binary")});
  out << format_diffstat(lines, color);
  return 0;
}

json selection_of(const std::vector<json>& files) {
  json select = json::array();
  for (const auto& f : files) select.push_back({{"path", str(f, "path")}});
  return select;
}

int report_worktree(const json& answer, std::ostream& out, std::ostream& err) {
  std::map<std::string, std::size_t> counts;
  auto files = files_of(answer);
  for (const auto& f : files) {
    std::string status = str(f, "status");
    counts[status]++;
    std::string line = status;
    line.resize(std::max<std::size_t>(line.size(), 10), ' ');
    line += stat_name(f);
    if (status == "merged") line += " (three-way merged with your edits)";
    if (status == "conflict") line += " (your edits and the sandbox's overlap: the file is left as it was)";
    if (status == "refused") line += ": " + str(f, "reason");
    out << line << "\n";
  }
  std::size_t written = counts["applied"] + counts["merged"];
  std::size_t problems = counts["conflict"] + counts["refused"];
  out << "wrote " << plural(written, "file") << " of " << files.size() << " to the workspace";
  if (counts["conflict"]) out << "; " << plural(counts["conflict"], "conflict");
  if (counts["refused"]) out << "; " << counts["refused"] << " refused";
  out << "\n";
  if (problems) err << "lockroom: not everything was applied: see the files marked conflict or refused\n";
  return problems ? 1 : 0;
}

int report_branch(const json& answer, std::size_t file_count, std::ostream& out, std::ostream& err) {
  if (!flag(answer, "created")) {
    err << "lockroom: the branch was not created: these files conflict with your HEAD:";
    if (auto c = answer.find("conflicts"); c != answer.end() && c->is_array())
      for (const auto& p : *c)
        if (p.is_string()) err << " " << p.get<std::string>();
    err << "\n";
    return 1;
  }
  std::string branch = str(answer, "branch");
  if (branch.rfind("refs/heads/", 0) == 0) branch = branch.substr(11);
  out << "saved " << plural(file_count, "file") << " as " << branch << " (commit " << str(answer, "commit").substr(0, 12)
      << "); your checkout is untouched: `git merge " << branch << "` or `git cherry-pick` it\n";
  report_refused(answer, err);
  return 0;
}

}  // namespace

bool path_selected(std::string_view path, const std::vector<std::string>& pathspecs) {
  if (pathspecs.empty()) return true;
  for (std::string_view spec : pathspecs) {
    while (spec.substr(0, 2) == "./") spec.remove_prefix(2);
    while (!spec.empty() && spec.back() == '/') spec.remove_suffix(1);
    if (spec.empty() || spec == ".") return true;
    if (path == spec) return true;
    if (path.size() > spec.size() && path.substr(0, spec.size()) == spec && path[spec.size()] == '/') return true;
  }
  return false;
}

std::string colorize_patch(std::string_view patch) {
  std::string out;
  out.reserve(patch.size() + patch.size() / 8);
  bool in_header = false;  // between "diff --git" and the first hunk: "---"/"+++" are meta lines there
  while (!patch.empty()) {
    std::size_t end = patch.find('\n');
    std::string_view line = patch.substr(0, end);
    std::string_view newline = end == std::string_view::npos ? "" : "\n";
    patch.remove_prefix(end == std::string_view::npos ? patch.size() : end + 1);
    if (line.substr(0, 5) == "diff ") in_header = true;
    const char* color = nullptr;
    std::string_view rest;
    if (line.substr(0, 2) == "@@") {
      in_header = false;
      std::size_t close = line.find("@@", 2);
      std::size_t cut = close == std::string_view::npos ? line.size() : close + 2;
      rest = line.substr(cut);
      line = line.substr(0, cut);
      color = kCyan;
    } else if (in_header) {
      color = kBold;
    } else if (!line.empty() && line[0] == '+') {
      color = kGreen;
    } else if (!line.empty() && line[0] == '-') {
      color = kRed;
    }
    if (color && !line.empty()) out.append(color).append(line).append(kReset);
    else out.append(line);
    out.append(rest).append(newline);
  }
  return out;
}

std::string format_diffstat(const std::vector<StatLine>& lines, bool color, std::size_t bar_width) {
  std::size_t name_width = 0, count_width = 1, most = 0, added = 0, removed = 0;
  for (const auto& l : lines) {
    name_width = std::max(name_width, l.name.size());
    count_width = std::max(count_width, std::to_string(l.added + l.removed).size());
    if (!l.binary) most = std::max(most, l.added + l.removed);
    added += l.added;
    removed += l.removed;
  }
  // Bars scaled as git does: the largest change fills `bar_width`; any change shows at least one mark.
  auto scale = [&](std::size_t n) -> std::size_t {
    if (n == 0 || most <= bar_width) return n;
    return std::max<std::size_t>(1, n * bar_width / most);
  };
  std::string out;
  for (const auto& l : lines) {
    out += " " + l.name + std::string(name_width - l.name.size(), ' ') + " | ";
    if (l.binary) {
      out += "Bin\n";
      continue;
    }
    std::string n = std::to_string(l.added + l.removed);
    out += std::string(count_width - n.size(), ' ') + n;
    std::size_t plus = scale(l.added), minus = scale(l.removed);
    if (plus + minus) out += " ";
    if (plus) out += (color ? kGreen : "") + std::string(plus, '+') + (color ? kReset : "");
    if (minus) out += (color ? kRed : "") + std::string(minus, '-') + (color ? kReset : "");
    out += "\n";
  }
  out += " " + plural(lines.size(), "file") + " changed";
  if (added || removed == 0) out += ", " + std::to_string(added) + (added == 1 ? " insertion(+)" : " insertions(+)");
  if (removed || added == 0) out += ", " + std::to_string(removed) + (removed == 1 ? " deletion(-)" : " deletions(-)");
  return out + "\n";
}

std::string text_field(const json& object, const std::string& key) {
  std::string value = str(object, key.c_str());
  if (str(object, (key + "Encoding").c_str()) != "base64") return value;
  auto decoded = protocol::channel::base64_decode(value);
  return decoded ? *decoded : std::string();
}

int run_diff(ControlClient& client, const DiffRequest& request, std::ostream& out, std::ostream& err) {
  const char* method = request.stat ? "changes/list" : "changes/diff";
  auto answer = client.call(method, json{{"sandboxId", client.sandbox_id()}}, request.timeout);
  if (!answer) {
    err << "lockroom: " << answer.error().message << "\n";
    return 1;
  }
  std::vector<json> files;
  for (auto& f : files_of(*answer))
    if (file_selected(f, request.paths)) files.push_back(std::move(f));
  report_unmatched(files, request.paths, err);
  report_refused(*answer, err);
  if (files.empty()) {
    if (request.paths.empty()) err << "lockroom: sandbox " << client.sandbox_id() << " has no changes\n";
    return 0;
  }
  if (request.stat) return print_stat(files, request.color, out);
  for (const auto& f : files) {
    std::string patch = text_field(f, "patch");
    out << (request.color ? colorize_patch(patch) : patch);
  }
  out.flush();
  return 0;
}

int run_apply(ControlClient& client, const ApplyRequest& request, std::ostream& out, std::ostream& err) {
  // A fresh listing first: the paths are matched against it, and apply names this view.
  auto listed = list_changes(client, request.timeout);
  if (!listed) {
    err << "lockroom: " << listed.error().message << "\n";
    return 1;
  }
  std::vector<json> all = files_of(*listed), chosen;
  for (const auto& f : all)
    if (file_selected(f, request.paths)) chosen.push_back(f);
  report_refused(*listed, err);
  if (all.empty()) {
    out << "sandbox " << client.sandbox_id() << " has no changes\n";
    return 0;
  }
  if (!report_unmatched(chosen, request.paths, err)) {
    err << "lockroom: nothing done; the changed files are:";
    for (const auto& f : all) err << " " << str(f, "path");
    err << "\n";
    return 1;
  }
  bool some = !request.paths.empty();
  if (request.discard) {
    json params{{"sandboxId", client.sandbox_id()}};
    if (some) {
      json paths = json::array();
      for (const auto& f : chosen) paths.push_back(str(f, "path"));
      params["paths"] = std::move(paths);
    }
    auto discarded = client.call("changes/discard", params, request.timeout);
    if (!discarded) {
      err << "lockroom: " << discarded.error().message << "\n";
      return 1;
    }
    out << "discarded " << plural(count(*discarded, "discarded"), "changed file") << " in sandbox " << client.sandbox_id()
        << " (the host is untouched)\n";
    return 0;
  }
  // Exactly what this listing showed: if the sandbox changed since, the apply refuses.
  json params{{"sandboxId", client.sandbox_id()}, {"viewId", listed->value("viewId", "")}, {"mode", request.branch ? "branch" : "worktree"}};
  if (some) params["select"] = selection_of(chosen);
  if (request.branch) {
    params["branch"] = *request.branch;
    params["force"] = request.force;
  }
  auto applied = client.call("changes/apply", params, request.timeout);
  if (!applied) {
    err << "lockroom: " << applied.error().message << "\n";
    return 1;
  }
  return request.branch ? report_branch(*applied, chosen.size(), out, err) : report_worktree(*applied, out, err);
}

}  // namespace lockroom::api
