// The workspace benchmark's source tree and host-side steps; see source_tree.h.
#include "bench/workspace/source_tree.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <stdexcept>

namespace lockroom::bench {

namespace fs = std::filesystem;

namespace {

// git with no configuration from the machine or the user, and an identity of its own.
const char* const kGit = "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -c user.name=bench -c user.email=bench@localhost";

}  // namespace

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

void sh(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("this command failed: " + command);
}

std::string sh_out(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run: " + command);
  std::string out;
  char buf[65536];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) throw std::runtime_error("this command failed: " + command);
  return out;
}

TempDir::TempDir(const char* prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a temporary directory like " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

SourceRepo::SourceRepo(const fs::path& source) {
  if (!fs::is_directory(source)) throw std::runtime_error("--source " + source.string() + " is not a directory");
  std::string d = shell_quote(dir().string());
  sh("tar c -C " + shell_quote(source.string()) + " --exclude=.git . | tar x -C " + d);
  sh("cd " + d + " && " + kGit + " init -q -b main && " + kGit + " add -A && " + kGit + " commit -q -m source");
  std::string listed = sh_out("cd " + d + " && " + kGit + " ls-files -z");
  for (std::size_t at = 0; at < listed.size();) {
    std::size_t end = listed.find('\0', at);
    if (end == std::string::npos) end = listed.size();
    std::string path = listed.substr(at, end - at);
    at = end + 1;
    fs::path full = dir() / path;
    if (fs::is_symlink(full) || !fs::is_regular_file(full)) continue;
    total_bytes_ += fs::file_size(full);
    files_.push_back(std::move(path));
  }
  if (files_.empty()) throw std::runtime_error("--source " + source.string() + " has no files to commit");
}

void SourceRepo::append(const std::vector<std::string>& paths, const std::string& line) const {
  for (const auto& p : paths) {
    std::ofstream out(dir() / p, std::ios::app | std::ios::binary);
    out << line << "\n";
    if (!out) throw std::runtime_error("cannot append to " + (dir() / p).string());
  }
}

double SourceRepo::clone_local_ms() const {
  TempDir target("lockroom-bench-clone");
  auto start = std::chrono::steady_clock::now();
  sh(std::string(kGit) + " clone -q --local " + shell_quote(dir().string()) + " " + shell_quote((target.path() / "c").string()));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

FILE* SourceRepo::open_tar_stream() const {
  std::string command = "tar c -C " + shell_quote(dir().string()) + " --exclude=./.git .";
  FILE* p = popen(command.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run: " + command);
  return p;
}

std::vector<std::string> spread(const std::vector<std::string>& files, std::size_t count) {
  std::vector<std::string> out;
  if (files.empty() || count == 0) return out;
  std::size_t step = std::max<std::size_t>(1, files.size() / count);
  for (std::size_t i = 0; i < files.size() && out.size() < count; i += step) out.push_back(files[i]);
  return out;
}

}  // namespace lockroom::bench
