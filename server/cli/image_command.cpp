// `lockroom image build [--force] [--agent PATH] [--package P…] [--npm SPEC…]`, `lockroom image ls
// [--json]` and `lockroom image prune`: the default guest image, built on first use and cached by
// content hash (server/vm/image/), the package images kits with Debian packages boot
// (vm/image/package_image.h), the npm images on them (vm/image/npm_image.h), and the templates
// restored instead of booting (server/vm/template_store.h).
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include <nlohmann/json.hpp>

#include "server/cli/command.h"
#include "server/common/paths.h"
#include "server/kits/npm_spec.h"
#include "server/vm/image/image_builder.h"
#include "server/vm/image/image_store.h"
#include "server/vm/image/npm_image.h"
#include "server/vm/image/package_image.h"
#include "server/vm/template_store.h"

namespace lockroom::cli {

namespace {

namespace img = vm::image;

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

int run_build(bool force, const std::string& agent, const std::vector<std::string>& packages, const std::vector<std::string>& npm) {
  img::ImageBuildOptions options;
  options.cache = default_paths().cache;
  options.agent = agent.empty() ? img::default_agent_path() : std::filesystem::path(agent);
  options.force = force;
  auto started = std::chrono::steady_clock::now();
  auto progress = [](const std::string& line) { std::cerr << "lockroom: " << line << std::endl; };
  auto image = img::ensure_image(options, progress);
  if (image && !packages.empty()) {
    img::PackageImageOptions package_options;
    package_options.cache = options.cache;
    package_options.packages = packages;
    package_options.max_bytes = img::max_package_bytes_from_env();
    package_options.refresh = force;
    image = img::ensure_package_image(*image, package_options, progress);
  }
  if (image && !npm.empty()) {
    img::NpmLayerOptions npm_options;
    npm_options.cache = options.cache;
    npm_options.max_bytes = img::max_npm_bytes_from_env();
    for (const auto& spec : npm) {  // as a kit file would say them, a file: path from here
      auto normal = kits::normalize_npm_spec(spec, std::filesystem::current_path());
      if (!normal) {
        std::cerr << "lockroom: --npm: " << normal.error().message << "\n";
        return 2;
      }
      npm_options.specs.push_back(*normal);
    }
    image = img::ensure_npm_image(*image, npm_options, progress);
  }
  if (!image) {
    std::cerr << "lockroom: cannot build the guest image: " << image.error().message << "\n";
    return 1;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto& m = image->manifest;
  std::cout << "image " << m.hash << " (kernel " << m.kernel_release << ", " << m.kernel_format << " " << mib(m.kernel_bytes)
            << ", initrd " << mib(m.initrd_bytes) << ") at " << image->dir.string() << "\n";
  if (m.packages)
    std::cout << "  packages on image " << m.packages->base_hash << ": " << m.packages->resolved.size() << " resolved, "
              << m.packages->files << " files, layer " << mib(m.packages->layer_bytes) << "\n";
  if (m.npm)
    std::cout << "  npm packages on image " << m.npm->base_hash << ": " << m.npm->resolved.size() << " installed, " << m.npm->files
              << " files, layer " << mib(m.npm->layer_bytes) << "\n";
  std::cerr << "lockroom: done in " << static_cast<int>(seconds * 10) / 10.0 << " s\n";
  return 0;
}

// The templates kept in the cache (base ones per machine, workspace ones per folder).
void print_templates(const std::filesystem::path& cache) {
  auto dirs = vm::default_template_dirs(cache);
  auto templates = vm::list_stored(dirs);
  if (templates.empty()) return;
  std::printf("\n  %-32s  %-9s  %-10s  %-19s  %s\n", "TEMPLATE", "KIND", "SIZE", "LAST USED", "WORKSPACE");
  for (const auto& t : templates) {
    char used[32] = "";
    std::time_t when = std::chrono::system_clock::to_time_t(t.last_used);
    std::strftime(used, sizeof used, "%Y-%m-%d %H:%M:%S", std::localtime(&when));
    bool ws = t.stored.meta.kind == vm::TemplateKind::kWorkspace;
    std::printf("  %-32s  %-9s  %-10s  %-19s  %s\n", t.stored.meta.key.c_str(), ws ? "workspace" : "base", mib(t.disk_bytes).c_str(), used,
                ws ? t.stored.meta.workspace_path.c_str() : "");
  }
  std::printf("(`lockroom image prune` removes them; they are made again when needed)\n");
}

// The package images (base image + a layer of Debian packages), after the images.
void print_package_images(const std::filesystem::path& cache) {
  auto images = img::list_package_images(cache);
  if (images.empty()) return;
  std::printf("\n  %-16s  %-16s  %-10s  %-10s  %-20s  %s\n", "PACKAGE IMAGE", "ON IMAGE", "LAYER", "INITRD", "CREATED", "PACKAGES");
  for (const auto& image : images) {
    const auto& m = image.manifest;
    std::string asked;
    for (const auto& p : m.packages->requested) asked += (asked.empty() ? "" : " ") + p;
    std::printf("  %-16s  %-16s  %-10s  %-10s  %-20s  %s (%zu resolved)\n", m.hash.c_str(), m.packages->base_hash.c_str(),
                mib(m.packages->layer_bytes).c_str(), mib(m.initrd_bytes).c_str(), m.created.c_str(), asked.c_str(),
                m.packages->resolved.size());
  }
}

// The npm images (an image + a layer of npm packages), after the package images.
void print_npm_images(const std::filesystem::path& cache) {
  auto images = img::list_npm_images(cache);
  if (images.empty()) return;
  std::printf("\n  %-16s  %-16s  %-10s  %-10s  %-20s  %s\n", "NPM IMAGE", "ON IMAGE", "LAYER", "INITRD", "CREATED", "NPM PACKAGES");
  for (const auto& image : images) {
    const auto& m = image.manifest;
    std::string asked;
    for (const auto& p : m.npm->requested) asked += (asked.empty() ? "" : " ") + p;
    std::printf("  %-16s  %-16s  %-10s  %-10s  %-20s  %s (%zu installed)\n", m.hash.c_str(), m.npm->base_hash.c_str(),
                mib(m.npm->layer_bytes).c_str(), mib(m.initrd_bytes).c_str(), m.created.c_str(), asked.c_str(), m.npm->resolved.size());
  }
}

int run_prune() {
  auto cache = default_paths().cache;
  auto dirs = vm::default_template_dirs(cache);
  std::size_t count = 0;
  std::uint64_t bytes = 0;
  for (const auto& t : vm::list_stored(dirs)) {
    vm::remove_stored(dirs, t.stored.meta.key);
    ++count;
    bytes += t.disk_bytes;
  }
  std::size_t stale = vm::sweep_stale(dirs);
  std::cout << "removed " << count << " template" << (count == 1 ? "" : "s") << " (" << mib(bytes) << ")";
  if (stale) std::cout << " and " << stale << " leftover file" << (stale == 1 ? "" : "s") << " of ended runs";
  std::cout << "\n";
  auto packages = img::prune_package_images(cache);
  if (packages.images || packages.debs)
    std::cout << "removed " << packages.images << " package image" << (packages.images == 1 ? "" : "s") << " and " << packages.debs
              << " downloaded package" << (packages.debs == 1 ? "" : "s") << " (" << mib(packages.bytes) << ")\n";
  auto npm = img::prune_npm_images(cache);
  if (npm.images || npm.layers)
    std::cout << "removed " << npm.images << " npm image" << (npm.images == 1 ? "" : "s") << " and " << npm.layers << " npm layer"
              << (npm.layers == 1 ? "" : "s") << " (" << mib(npm.bytes) << ")\n";
  return 0;
}

int run_ls(bool json) {
  auto cache = default_paths().cache;
  auto images = img::list_images(cache);
  auto current = img::current_image_hash(cache);
  if (json) {
    auto list = nlohmann::json::array();
    for (const auto& image : images) {
      auto j = img::manifest_to_json(image.manifest);
      j["path"] = image.dir.string();
      j["current"] = current && *current == image.manifest.hash;
      list.push_back(std::move(j));
    }
    auto layered = img::list_package_images(cache);
    for (auto& image : img::list_npm_images(cache)) layered.push_back(std::move(image));
    for (const auto& image : layered) {
      auto j = img::manifest_to_json(image.manifest);  // with its "packages" and "npm" parts
      j["path"] = image.dir.string();
      j["current"] = false;
      list.push_back(std::move(j));
    }
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  if (images.empty()) {
    std::cout << "no guest images in " << img::images_dir(cache).string() << "; `lockroom image build` makes one\n";
    return 0;
  }
  std::printf("  %-16s  %-16s  %-8s  %-10s  %-10s  %s\n", "HASH", "KERNEL", "FORMAT", "KERNEL", "INITRD", "CREATED");
  for (const auto& image : images) {
    const auto& m = image.manifest;
    bool is_current = current && *current == m.hash;
    std::printf("%s %-16s  %-16s  %-8s  %-10s  %-10s  %s\n", is_current ? "*" : " ", m.hash.c_str(),
                m.kernel_release.c_str(), m.kernel_format.c_str(), mib(m.kernel_bytes).c_str(), mib(m.initrd_bytes).c_str(),
                m.created.c_str());
  }
  print_package_images(cache);
  print_npm_images(cache);
  print_templates(cache);
  return 0;
}

}  // namespace

void add_image_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("image", "build and list guest images and templates");
  cmd->require_subcommand(1);

  auto* build = cmd->add_subcommand("build", "build the default guest image (downloads the kernel package on first use)");
  auto force = std::make_shared<bool>(false);
  auto agent = std::make_shared<std::string>();
  build->add_flag("--force", *force, "rebuild even if an image with the same inputs is cached");
  auto packages = std::make_shared<std::vector<std::string>>();
  build->add_option("--agent", *agent, "the lockroom-agent to put in the guest (default: next to this program)");
  build->add_option("--package", *packages, "also build the package image with these Debian packages (repeatable), as a kit's `packages` would");
  auto npm = std::make_shared<std::vector<std::string>>();
  build->add_option("--npm", *npm, "also build the npm image with these npm specs (repeatable), as a kit's `npm` would");
  build->callback([&ctx, force, agent, packages, npm] { ctx.exit_code = run_build(*force, *agent, *packages, *npm); });

  auto* ls = cmd->add_subcommand("ls", "list cached guest images (* marks the current one)");
  auto json = std::make_shared<bool>(false);
  ls->add_flag("--json", *json, "machine-readable output");
  ls->callback([&ctx, json] { ctx.exit_code = run_ls(*json); });

  auto* prune = cmd->add_subcommand("prune", "remove the templates kept in the cache (workspace templates hold copies of your code), the package and npm images, downloaded packages and npm layers");
  prune->callback([&ctx] { ctx.exit_code = run_prune(); });
}

}  // namespace lockroom::cli
