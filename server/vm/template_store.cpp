// Templates on disk; see template_store.h.
#include "server/vm/template_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "server/vm/image/initramfs.h"
#include "server/vm/image/sha256.h"

#ifndef LOCKROOM_VERSION
#define LOCKROOM_VERSION "0.0.0"
#endif

namespace lockroom::vm {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::atomic<unsigned> g_build_seq{0};

constexpr std::uint64_t kMaxMetaBytes = 64 * 1024;

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

// A dir of ours, 0700, not a symlink: created if missing, its mode fixed if wider.
Result<void> private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error(ErrorCode::kUnavailable, "cannot create " + dir.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return make_error(ErrorCode::kUnavailable, dir.string() + " is not a directory (a symlink?); remove it");
  if (st.st_uid != geteuid())
    return make_error(ErrorCode::kUnavailable, dir.string() + " belongs to another user; remove it or set LOCKROOM_CACHE_DIR");
  if ((st.st_mode & 07777) != 0700 && chmod(dir.c_str(), 0700) != 0)
    return make_error(ErrorCode::kUnavailable, "cannot make " + dir.string() + " private (0700): " + std::strerror(errno));
  return {};
}

// A program named without a slash, found on PATH as execvp would.
fs::path resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return name;
}

// "path size mtime" of the QEMU binary (through symlinks): an upgrade changes it.
std::string binary_identity(const std::string& program) {
  fs::path p = resolve_program(program);
  std::error_code ec;
  fs::path real = fs::canonical(p, ec);
  if (ec) real = p;
  struct stat st {};
  if (stat(real.c_str(), &st) != 0) return real.string() + " missing";
  return real.string() + " " + std::to_string(st.st_size) + " " + std::to_string(mtime_ns(st));
}

// The host CPU's model and a digest of its flags (KVM restores need the same CPU).
std::string host_cpu() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line) && (model.empty() || flags.empty())) {
    auto value = [&] { auto c = line.find(':'); return c == std::string::npos ? std::string() : line.substr(c + 1); };
    if (model.empty() && line.rfind("model name", 0) == 0) model = value();
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = value();
  }
  return model + " flags " + image::sha256_hex(flags).substr(0, 16);
}

// The kernel command line without `tsc_early_khz=N`, which each process measures anew.
std::string stable_cmdline(const std::string& cmdline) {
  std::stringstream words(cmdline);
  std::string word, out;
  while (words >> word)
    if (word.rfind("tsc_early_khz=", 0) != 0) out += (out.empty() ? "" : " ") + word;
  return out;
}

bool pid_alive(int pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// The pid in names like `<prefix>-<pid>-<n>[.ram]`, if any.
std::optional<int> pid_in_name(std::string name) {
  if (auto dot = name.rfind(".ram"); dot != std::string::npos && dot + 4 == name.size()) name.resize(dot);
  auto last = name.rfind('-');
  if (last == std::string::npos || last == 0) return std::nullopt;
  auto prev = name.rfind('-', last - 1);
  if (prev == std::string::npos) return std::nullopt;
  std::string digits = name.substr(prev + 1, last - prev - 1);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(digits);
}

Result<json> read_meta_json(const fs::path& dir) {
  fs::path file = dir / "meta.json";
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) return make_error(ErrorCode::kNotFound, "no " + file.string());
  if (size > kMaxMetaBytes) return make_error(ErrorCode::kInvalidInput, file.string() + " is too large to be a template's");
  auto text = image::read_host_file(file);
  if (!text) return text.error();
  auto j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(ErrorCode::kInvalidInput, file.string() + " is not valid JSON");
  return j;
}

std::uint64_t allocated_bytes(const fs::path& p) {
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

std::string kind_name(TemplateKind k) { return k == TemplateKind::kBase ? "base" : "workspace"; }

}  // namespace

TemplateDirs default_template_dirs(const fs::path& cache) {
  TemplateDirs dirs;
  dirs.root = cache / "templates";
  std::error_code ec;
  bool shm = fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0;
  dirs.ram_root = shm ? fs::path("/dev/shm") / ("lockroom-" + std::to_string(geteuid())) : dirs.root / "ram";
  return dirs;
}

Result<void> prepare_template_dirs(const TemplateDirs& dirs) {
  if (auto ok = private_dir(dirs.root); !ok) return ok;
  return private_dir(dirs.ram_root);
}

std::string template_identity(const QemuConfig& m, const std::string& image_hash) {
  std::ostringstream s;
  s << "format " << kTemplateFormatVersion << "\n"
    << "lockroom " << LOCKROOM_VERSION << "\n"
    << "image " << image_hash << "\n"
    << "qemu " << binary_identity(m.qemu) << "\n"
    << "accel " << accel_name(m.accel) << "\n"
    << "vcpus " << m.vcpus << "\n"
    << "memory_mib " << m.memory_mib << "\n"
    << "tb_mib " << m.tcg_tb_size_mib << "\n"
    << "kernel " << m.kernel.string() << "\n"
    << "initrd " << m.initrd.string() << "\n"
    << "cmdline " << stable_cmdline(m.kernel_cmdline) << "\n"
    << "channel " << m.channel_name << "\n"
    << "cpu " << host_cpu() << "\n";
  return s.str();
}

std::string workspace_template_identity(const std::string& base_identity, const std::string& workspace_path,
                                        const std::string& options_digest) {
  return base_identity + "workspace " + workspace_path + "\nsnapshot_options " + options_digest + "\n";
}

std::string template_key(const std::string& identity) { return image::sha256_hex(identity).substr(0, 32); }

json meta_to_json(const TemplateMeta& m) {
  json j = {{"format", kTemplateFormatVersion}, {"key", m.key}, {"identity", m.identity}, {"kind", kind_name(m.kind)},
            {"ramFile", m.ram_file.string()}, {"ramBytes", m.ram_bytes}, {"ramMtimeNs", m.ram_mtime_ns},
            {"ramInode", m.ram_inode}, {"stateBytes", m.state_bytes}, {"stateSha256", m.state_sha256},
            {"bootMs", m.boot_ms}, {"createdUnix", m.created_unix}};
  if (m.kind == TemplateKind::kWorkspace)
    j["workspace"] = {{"path", m.workspace_path}, {"commit", m.workspace_commit}, {"branch", m.workspace_branch}};
  return j;
}

Result<TemplateMeta> meta_from_json(const json& j) {
  try {
    if (j.at("format").get<int>() != kTemplateFormatVersion)
      return make_error(ErrorCode::kInvalidInput, "made by another lockroom (template format " + j.at("format").dump() + ")");
    TemplateMeta m;
    m.key = j.at("key").get<std::string>();
    m.identity = j.at("identity").get<std::string>();
    std::string kind = j.at("kind").get<std::string>();
    if (kind != "base" && kind != "workspace") return make_error(ErrorCode::kInvalidInput, "unknown template kind \"" + kind + "\"");
    m.kind = kind == "base" ? TemplateKind::kBase : TemplateKind::kWorkspace;
    m.ram_file = j.at("ramFile").get<std::string>();
    m.ram_bytes = j.at("ramBytes").get<std::uint64_t>();
    m.ram_mtime_ns = j.at("ramMtimeNs").get<std::int64_t>();
    m.ram_inode = j.at("ramInode").get<std::uint64_t>();
    m.state_bytes = j.at("stateBytes").get<std::uint64_t>();
    m.state_sha256 = j.at("stateSha256").get<std::string>();
    m.boot_ms = j.value("bootMs", std::int64_t{0});
    m.created_unix = j.value("createdUnix", std::int64_t{0});
    if (m.kind == TemplateKind::kWorkspace) {
      const auto& w = j.at("workspace");
      m.workspace_path = w.at("path").get<std::string>();
      m.workspace_commit = w.at("commit").get<std::string>();
      m.workspace_branch = w.value("branch", std::string());
    }
    return m;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kInvalidInput, std::string("meta.json is incomplete: ") + e.what());
  }
}

Result<TemplateBuild> begin_build(const TemplateDirs& dirs, const std::string& key) {
  if (auto ok = prepare_template_dirs(dirs); !ok) return ok.error();
  std::string id = std::to_string(getpid()) + "-" + std::to_string(++g_build_seq);
  TemplateBuild build;
  build.dir = dirs.root / (".build-" + key + "-" + id);
  if (mkdir(build.dir.c_str(), 0700) != 0)
    return make_error(ErrorCode::kUnavailable, "cannot create " + build.dir.string() + ": " + std::strerror(errno));
  build.ram_file = dirs.ram_root / (key + "-" + id + ".ram");
  // Names the RAM file from the start, so removal finds it even without a (valid) meta.json.
  std::ofstream(build.dir / "ram-file") << build.ram_file.string();
  return build;
}

Result<bool> publish_build(const TemplateDirs& dirs, const TemplateBuild& build, TemplateMeta meta) {
  fs::path state = build.dir / "device.state";
  auto bytes = image::read_host_file(state);
  if (!bytes) return bytes.error();
  meta.state_bytes = bytes->size();
  meta.state_sha256 = image::sha256_hex(*bytes);
  struct stat st {};
  if (stat(build.ram_file.c_str(), &st) != 0)
    return make_error(ErrorCode::kUnavailable, "the template's RAM file " + build.ram_file.string() + " is gone");
  chmod(build.ram_file.c_str(), 0600);  // QEMU creates it 0644; the dir is private anyway
  meta.ram_file = build.ram_file;
  meta.ram_bytes = static_cast<std::uint64_t>(st.st_size);
  meta.ram_mtime_ns = mtime_ns(st);
  meta.ram_inode = st.st_ino;
  meta.created_unix = static_cast<std::int64_t>(time(nullptr));
  std::string text = meta_to_json(meta).dump(2) + "\n";
  fs::path file = build.dir / "meta.json";
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(ErrorCode::kUnavailable, "cannot write " + file.string() + ": " + std::strerror(errno));
  bool wrote = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  ::close(fd);
  if (!wrote) return make_error(ErrorCode::kUnavailable, "cannot write " + file.string() + " (disk full?)");
  fs::path final_dir = dirs.root / meta.key;
  if (rename(build.dir.c_str(), final_dir.c_str()) == 0) return true;
  if (errno == EEXIST || errno == ENOTEMPTY) return false;
  return make_error(ErrorCode::kUnavailable, "cannot publish the template as " + final_dir.string() + ": " + std::strerror(errno));
}

void discard_build(const TemplateBuild& build) {
  std::error_code ec;
  if (!build.ram_file.empty()) fs::remove(build.ram_file, ec);
  if (!build.dir.empty()) fs::remove_all(build.dir, ec);
}

Result<StoredTemplate> load_stored(const TemplateDirs& dirs, const std::string& key, const std::string& identity) {
  StoredTemplate t;
  t.dir = dirs.root / key;
  struct stat st {};
  if (lstat(t.dir.c_str(), &st) != 0) return make_error(ErrorCode::kNotFound, "no template " + key);
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
    return make_error(ErrorCode::kInvalidInput, t.dir.string() + " is not a private directory of this user");
  auto j = read_meta_json(t.dir);
  if (!j) return make_error(j.error().code == ErrorCode::kNotFound ? ErrorCode::kInvalidInput : j.error().code, j.error().message);
  auto meta = meta_from_json(*j);
  if (!meta) return meta.error();
  t.meta = std::move(*meta);
  if (t.meta.key != key) return make_error(ErrorCode::kInvalidInput, "meta.json names template " + t.meta.key + ", not " + key);
  if (t.meta.identity != identity)
    return make_error(ErrorCode::kInvalidInput, "made for another machine, image or lockroom version");
  auto state = image::read_host_file(t.state_file());
  if (!state) return make_error(ErrorCode::kInvalidInput, "its device state is unreadable: " + state.error().message);
  if (state->size() != t.meta.state_bytes || image::sha256_hex(*state) != t.meta.state_sha256)
    return make_error(ErrorCode::kInvalidInput, "its device state is not the one saved (" + std::to_string(state->size()) + " of " +
                                                    std::to_string(t.meta.state_bytes) + " bytes, or another digest)");
  if (t.meta.ram_file.parent_path() != dirs.ram_root)
    return make_error(ErrorCode::kInvalidInput, "its RAM file " + t.meta.ram_file.string() + " is outside " + dirs.ram_root.string());
  if (lstat(t.meta.ram_file.c_str(), &st) != 0)
    return make_error(ErrorCode::kInvalidInput, "its RAM file " + t.meta.ram_file.string() + " is gone (a reboot clears /dev/shm)");
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
    return make_error(ErrorCode::kInvalidInput, "its RAM file " + t.meta.ram_file.string() + " is not a private file of this user");
  if (static_cast<std::uint64_t>(st.st_size) != t.meta.ram_bytes || st.st_ino != t.meta.ram_inode || mtime_ns(st) != t.meta.ram_mtime_ns)
    return make_error(ErrorCode::kInvalidInput, "its RAM file " + t.meta.ram_file.string() + " changed since it was saved");
  struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  utimensat(AT_FDCWD, t.dir.c_str(), now, 0);  // last use
  return t;
}

void remove_stored(const TemplateDirs& dirs, const std::string& key) {
  fs::path dir = dirs.root / key;
  fs::path aside = dirs.root / (".trash-" + key + "-" + std::to_string(getpid()) + "-" + std::to_string(++g_build_seq));
  if (rename(dir.c_str(), aside.c_str()) != 0) return;  // gone already (another process removed it)
  std::error_code ec;
  std::vector<fs::path> rams;
  if (auto j = read_meta_json(aside); j && j->contains("ramFile") && (*j)["ramFile"].is_string())
    rams.emplace_back((*j)["ramFile"].get<std::string>());
  std::string named;
  if (std::ifstream in(aside / "ram-file"); in && std::getline(in, named)) rams.emplace_back(named);
  for (const auto& ram : rams)
    if (ram.parent_path() == dirs.ram_root) fs::remove(ram, ec);
  fs::remove_all(aside, ec);
}

std::vector<TemplateListing> list_stored(const TemplateDirs& dirs) {
  std::vector<TemplateListing> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dirs.root, ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || name == "ram" || !entry.is_directory(ec)) continue;
    auto j = read_meta_json(entry.path());
    if (!j) continue;
    auto meta = meta_from_json(*j);
    if (!meta) continue;
    TemplateListing l;
    l.stored.dir = entry.path();
    l.stored.meta = std::move(*meta);
    l.disk_bytes = allocated_bytes(l.stored.state_file()) + allocated_bytes(l.stored.meta.ram_file);
    struct stat st {};
    if (stat(entry.path().c_str(), &st) == 0)
      l.last_used = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(mtime_ns(st))));
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used > b.last_used; });
  return out;
}

std::vector<std::string> evict(const TemplateDirs& dirs, TemplateKind kind, std::size_t max_count, std::uint64_t max_bytes,
                               const std::string& keep) {
  std::vector<std::string> removed;
  std::size_t count = 0;
  std::uint64_t bytes = 0;
  for (const auto& l : list_stored(dirs)) {  // most recent first
    if (l.stored.meta.kind != kind) continue;
    if (l.stored.meta.key == keep || (count < max_count && bytes + l.disk_bytes <= max_bytes)) {
      ++count;
      bytes += l.disk_bytes;
      continue;
    }
    remove_stored(dirs, l.stored.meta.key);
    removed.push_back(l.stored.meta.key);
  }
  return removed;
}

std::size_t sweep_stale(const TemplateDirs& dirs) {
  std::size_t removed = 0;
  std::error_code ec;
  std::set<fs::path> referenced;
  for (const auto& l : list_stored(dirs)) referenced.insert(l.stored.meta.ram_file);
  for (const auto& entry : fs::directory_iterator(dirs.root, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(".build-", 0) != 0 && name.rfind(".trash-", 0) != 0) continue;
    auto pid = pid_in_name(name);
    if (!pid || pid_alive(*pid)) continue;
    fs::remove_all(entry.path(), ec);
    ++removed;
  }
  for (const auto& entry : fs::directory_iterator(dirs.ram_root, ec)) {
    std::string name = entry.path().filename().string();
    auto pid = pid_in_name(name);
    if (!pid || pid_alive(*pid) || referenced.count(entry.path()) || name.size() < 4 || name.substr(name.size() - 4) != ".ram") continue;
    fs::remove(entry.path(), ec);
    ++removed;
  }
  return removed;
}

}  // namespace lockroom::vm
