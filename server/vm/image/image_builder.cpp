// ensure_image; see image_builder.h.
#include "server/vm/image/image_builder.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <sstream>

#include "server/common/subprocess.h"
#include "server/vm/image/guest_git.h"
#include "server/vm/image/guest_tools.h"
#include "server/vm/image/init_script.h"
#include "server/vm/image/initramfs.h"
#include "server/vm/image/kernel_extract.h"
#include "server/vm/image/kernel_package.h"
#include "server/vm/image/module_closure.h"
#include "server/vm/image/sha256.h"
#include "server/vm/image/shared_libs.h"
#include "server/vm/image/temp_dir.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

Result<fs::path> find_busybox() {
  auto path = find_program("busybox");
  if (!path) return make_error(ErrorCode::kUnavailable, "busybox is not installed; the guest needs it: sudo apt-get install busybox-static");
  auto libs = shared_libraries(*path);
  if (libs.ok() && !libs->empty())
    return make_error(ErrorCode::kUnavailable, path->string() + " is dynamically linked; the guest needs a static busybox: sudo apt-get install busybox-static");
  return fs::canonical(*path);
}

Result<std::vector<std::string>> busybox_applets(const fs::path& busybox) {
  auto run = run_capture({busybox.string(), "--list"});
  if (!run || run->exit_code != 0) return make_error(ErrorCode::kUnavailable, busybox.string() + " --list failed; reinstall busybox-static");
  std::vector<std::string> applets;
  std::istringstream in(run->output);
  std::string name;
  while (in >> name) applets.push_back(name);
  return applets;
}

// The kernel lockroom boots: the ELF vmlinux unpacked once per kernel package (faster under
// TCG), or the bzImage when that is not possible.
fs::path boot_kernel(const KernelTree& kernel, const Progress& progress, std::string& format) {
  fs::path vmlinux = kernel.root / "vmlinux";
  if (!fs::exists(vmlinux)) {
    progress("unpacking the kernel for direct boot (vmlinux)");
    fs::path part = kernel.root / "vmlinux.part";
    if (auto ok = extract_vmlinux(kernel.vmlinuz(), part); !ok) {
      progress("booting the compressed kernel: " + ok.error().message);
      format = "bzImage";
      return kernel.vmlinuz();
    }
    std::error_code ec;
    fs::rename(part, vmlinux, ec);
  }
  format = "vmlinux";
  return vmlinux;
}

Result<void> write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return make_error(ErrorCode::kUnavailable, "cannot write " + path.string() + " (disk full?)");
  return {};
}

}  // namespace

fs::path default_agent_path() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("lockroom-agent") : self.parent_path() / "lockroom-agent";
}

Result<GuestImage> ensure_image(const ImageBuildOptions& options, const Progress& progress) {
  auto busybox = find_busybox();
  if (!busybox) return busybox.error();
  if (!fs::exists(options.agent))
    return make_error(ErrorCode::kNotFound, "lockroom-agent not found at " + options.agent.string() +
                                                "; build it (target lockroom-agent) or pass --agent PATH");
  auto kernel = ensure_kernel(options.cache / "kernels", *busybox, options.force, progress);
  if (!kernel) return kernel.error();

  auto dep = read_host_file(kernel->modules_dir() / "modules.dep");
  if (!dep) return dep.error();
  auto builtin = read_host_file(kernel->modules_dir() / "modules.builtin");
  auto order = module_load_order(options.modules, *dep, builtin ? *builtin : std::string());
  if (!order) return order.error();
  auto libs = shared_libraries(options.agent);
  if (!libs) return libs.error();
  auto git = find_guest_git();
  if (!git) return git.error();
  libs->insert(libs->end(), git->libs.begin(), git->libs.end());  // one copy of each (libc is shared)
  GuestTools tools = find_guest_tools();  // optional: what the host lacks is left out and named
  for (const auto& t : tools.found) libs->insert(libs->end(), t.libs.begin(), t.libs.end());
  for (const auto& m : tools.missing) progress("the guest image will have no " + m.name + ": " + m.reason);
  std::sort(libs->begin(), libs->end());
  libs->erase(std::unique(libs->begin(), libs->end()), libs->end());
  auto applets = busybox_applets(*busybox);
  if (!applets) return applets.error();
  std::string init = init_script(kernel->release, *order);

  // Everything that goes in, hashed in a fixed order.
  Sha256 h;
  h.add("format", std::to_string(kImageFormatVersion));
  h.add("kernel-package", kernel->package + "=" + kernel->package_version);
  if (auto ok = h.add_file("vmlinuz", kernel->vmlinuz()); !ok) return ok.error();
  for (const auto& m : *order)
    if (auto ok = h.add_file("module:" + m.path, kernel->modules_dir() / m.path); !ok) return ok.error();
  if (auto ok = h.add_file("busybox", *busybox); !ok) return ok.error();
  for (const auto& a : *applets) h.add("applet", a);
  h.add("users", std::string(kGuestPasswd) + kGuestGroup);
  if (auto ok = h.add_file("agent", options.agent); !ok) return ok.error();
  for (const auto& lib : *libs)
    if (auto ok = h.add_file("lib:" + lib, lib); !ok) return ok.error();
  if (auto ok = h.add_file("git", git->program); !ok) return ok.error();
  for (const auto& [guest, host] : git->templates)
    if (auto ok = h.add_file("git-template:" + guest, host); !ok) return ok.error();
  for (const auto& t : tools.found) {
    if (auto ok = h.add_file("tool:" + t.guest_path, t.program); !ok) return ok.error();
    for (const auto& [path, target] : t.links) h.add("tool-link:" + path, target);
  }
  for (const auto& m : tools.missing) h.add("tool-missing", m.name);
  h.add("gitconfig", guest_gitconfig());
  h.add("hosts", kGuestHosts);
  h.add("init", init);
  h.add("agent-copy", "strip --strip-debug when strip is installed");
  std::string hash = h.hex_digest().substr(0, 16);

  fs::path final_dir = images_dir(options.cache) / hash;
  if (!options.force) {
    if (auto existing = load_image(final_dir)) {
      (void)set_current_image(options.cache, hash);
      return existing;
    }
  }

  auto work = TempDir::create(images_dir(options.cache), ".build-");
  if (!work) return work.error();
  progress("building the guest image " + hash + " (kernel " + kernel->release + ")");
  std::string format;
  fs::path kernel_file = boot_kernel(*kernel, progress, format);
  std::error_code ec;
  fs::create_hard_link(kernel_file, work->path() / "kernel", ec);
  if (ec) fs::copy_file(kernel_file, work->path() / "kernel", ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot copy the kernel into " + work->path().string() + ": " + ec.message());

  // Debug info is most of a RelWithDebInfo agent; the guest has no use for it, and every byte of
  // the initramfs is unpacked at each cold boot.
  fs::path agent = options.agent;
  fs::path stripped = work->path() / ".agent.stripped";
  if (find_program("strip")) {
    auto strip = run_capture({"strip", "--strip-debug", "-o", stripped.string(), options.agent.string()});
    if (strip && strip->exit_code == 0) agent = stripped;
  }
  InitramfsInputs inputs{*busybox, *applets, kernel->modules_dir(), kernel->release, *order, agent, *libs, init, *git};
  auto archive = plan_initramfs(inputs);
  fs::remove(stripped, ec);
  if (!archive) return archive.error();
  if (auto ok = add_guest_tools(*archive, tools); !ok) return ok.error();
  std::string initrd = archive->bytes();
  if (auto ok = write_file(work->path() / "initrd", initrd); !ok) return ok.error();

  ImageManifest m;
  m.hash = hash;
  m.kernel_package = kernel->package;
  m.kernel_version = kernel->package_version;
  m.kernel_release = kernel->release;
  m.kernel_format = format;
  m.kernel_bytes = fs::file_size(work->path() / "kernel", ec);
  m.initrd_bytes = initrd.size();
  for (const auto& mod : *order) m.modules.push_back(mod.name);
  m.agent_path = fs::absolute(options.agent).string();
  m.agent_sha256 = sha256_hex(*read_host_file(options.agent));
  m.agent_libs = *libs;
  m.busybox_sha256 = sha256_hex(*read_host_file(*busybox));
  m.git_path = git->program.string();
  m.git_sha256 = sha256_hex(*read_host_file(git->program));
  for (const auto& t : tools.found) m.tools.push_back({t.name, t.program.string(), sha256_hex(*read_host_file(t.program))});
  for (const auto& t : tools.missing) m.missing_tools.push_back({t.name, t.reason});
  m.created = utc_now();
  if (auto ok = write_file(work->path() / "manifest.json", manifest_to_json(m).dump(2) + "\n"); !ok) return ok.error();

  if (fs::exists(final_dir)) fs::remove_all(final_dir, ec);  // --force, or a damaged folder
  fs::rename(work->path(), final_dir, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot move the image into " + final_dir.string() + ": " + ec.message());
  if (auto ok = set_current_image(options.cache, hash); !ok) return ok.error();
  return load_image(final_dir);
}

}  // namespace lockroom::vm::image
