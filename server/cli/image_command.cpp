// `lockroom image build [--force] [--agent PATH]` and `lockroom image ls [--json]`: the default
// guest image, built on first use and cached by content hash (server/vm/image/).
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "server/cli/command.h"
#include "server/common/paths.h"
#include "server/vm/image/image_builder.h"
#include "server/vm/image/image_store.h"

namespace lockroom::cli {

namespace {

namespace img = vm::image;

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

int run_build(bool force, const std::string& agent) {
  img::ImageBuildOptions options;
  options.cache = default_paths().cache;
  options.agent = agent.empty() ? img::default_agent_path() : std::filesystem::path(agent);
  options.force = force;
  auto started = std::chrono::steady_clock::now();
  auto image = img::ensure_image(options, [](const std::string& line) { std::cerr << "lockroom: " << line << std::endl; });
  if (!image) {
    std::cerr << "lockroom: cannot build the guest image: " << image.error().message << "\n";
    return 1;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto& m = image->manifest;
  std::cout << "image " << m.hash << " (kernel " << m.kernel_release << ", " << m.kernel_format << " " << mib(m.kernel_bytes)
            << ", initrd " << mib(m.initrd_bytes) << ") at " << image->dir.string() << "\n";
  std::cerr << "lockroom: done in " << static_cast<int>(seconds * 10) / 10.0 << " s\n";
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
  return 0;
}

}  // namespace

void add_image_command(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("image", "build and list guest images");
  cmd->require_subcommand(1);

  auto* build = cmd->add_subcommand("build", "build the default guest image (downloads the kernel package on first use)");
  auto force = std::make_shared<bool>(false);
  auto agent = std::make_shared<std::string>();
  build->add_flag("--force", *force, "rebuild even if an image with the same inputs is cached");
  build->add_option("--agent", *agent, "the lockroom-agent to put in the guest (default: next to this program)");
  build->callback([&ctx, force, agent] { ctx.exit_code = run_build(*force, *agent); });

  auto* ls = cmd->add_subcommand("ls", "list cached guest images (* marks the current one)");
  auto json = std::make_shared<bool>(false);
  ls->add_flag("--json", *json, "machine-readable output");
  ls->callback([&ctx, json] { ctx.exit_code = run_ls(*json); });
}

}  // namespace lockroom::cli
