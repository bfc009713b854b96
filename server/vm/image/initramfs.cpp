// plan_initramfs; see initramfs.h.
#include "server/vm/image/initramfs.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lockroom::vm::image {

Result<std::string> read_host_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kUnavailable, "cannot read " + path.string() + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<CpioArchive> plan_initramfs(const InitramfsInputs& in) {
  CpioArchive a;
  for (const char* dir : {"proc", "sys", "dev", "run", "etc", "sbin", "usr/bin", "usr/sbin", "var"})
    if (auto ok = a.add_directory(dir); !ok) return ok.error();
  if (auto ok = a.add_directory("tmp", 01777); !ok) return ok.error();
  if (auto ok = a.add_directory("root", 0700); !ok) return ok.error();

  auto busybox = read_host_file(in.busybox);
  if (!busybox) return busybox.error();
  if (auto ok = a.add_file("bin/busybox", std::move(*busybox), 0755); !ok) return ok.error();
  for (const auto& applet : in.applets) {
    if (applet == "busybox" || applet.empty() || applet.find('/') != std::string::npos) continue;
    if (auto ok = a.add_symlink("bin/" + applet, "busybox"); !ok) return ok.error();
  }

  for (const auto& m : in.modules) {
    auto bytes = read_host_file(in.modules_dir / m.path);
    if (!bytes) return bytes.error();
    if (auto ok = a.add_file("lib/modules/" + in.release + "/" + m.path, std::move(*bytes), 0644); !ok) return ok.error();
  }

  auto agent = read_host_file(in.agent);
  if (!agent) return agent.error();
  if (auto ok = a.add_file("sbin/lockroom-agent", std::move(*agent), 0755); !ok) return ok.error();
  for (const auto& lib : in.agent_libs) {
    auto bytes = read_host_file(lib);
    if (!bytes) return bytes.error();
    if (auto ok = a.add_file(lib.substr(lib.find_first_not_of('/')), std::move(*bytes), 0755); !ok) return ok.error();
  }
  if (in.git)
    if (auto ok = add_guest_git(a, *in.git); !ok) return ok.error();

  if (auto ok = a.add_file("etc/passwd", kGuestPasswd, 0644); !ok) return ok.error();
  if (auto ok = a.add_file("etc/group", kGuestGroup, 0644); !ok) return ok.error();
  if (auto ok = a.add_file("etc/hostname", "lockroom\n", 0644); !ok) return ok.error();
  if (auto ok = a.add_file("etc/hosts", kGuestHosts, 0644); !ok) return ok.error();
  if (auto ok = a.add_file("init", in.init, 0755); !ok) return ok.error();
  return a;
}

}  // namespace lockroom::vm::image
