// Optional client tools for the guest image; see guest_tools.h.
#include "server/vm/image/guest_tools.h"

#include <optional>

#include "server/common/subprocess.h"
#include "server/vm/image/initramfs.h"
#include "server/vm/image/shared_libs.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

namespace {

// The program with its libraries, or why it cannot go in.
Result<GuestTool> describe_tool(std::string name, const fs::path& host_path, std::string guest_path) {
  std::error_code ec;
  GuestTool tool;
  tool.name = std::move(name);
  tool.program = fs::canonical(host_path, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot resolve " + host_path.string() + ": " + ec.message());
  auto libs = shared_libraries(tool.program);
  if (!libs) return libs.error();
  tool.libs = std::move(*libs);
  tool.guest_path = std::move(guest_path);
  return tool;
}

// git's exec path on the host ("/usr/lib/git-core"): where git looks for its remote helpers,
// and where the guest's git (the same binary) will look too.
std::optional<fs::path> git_exec_path() {
  if (!find_program("git")) return std::nullopt;
  auto run = run_capture({"git", "--exec-path"});
  if (!run || run->exit_code != 0) return std::nullopt;
  std::string text = run->output;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty() || text.front() != '/') return std::nullopt;
  return fs::path(text);
}

}  // namespace

GuestTools find_guest_tools() {
  GuestTools tools;
  if (auto curl = find_program("curl"); !curl) {
    tools.missing.push_back({"curl", "curl is not installed on the host; the guest image is built without it: sudo apt-get install curl"});
  } else if (auto tool = describe_tool("curl", *curl, "usr/bin/curl"); !tool) {
    tools.missing.push_back({"curl", "the host's curl cannot be copied into the guest: " + tool.error().message});
  } else {
    tools.found.push_back(std::move(*tool));
  }

  auto exec_path = git_exec_path();
  fs::path helper = exec_path ? *exec_path / "git-remote-http" : fs::path();
  std::error_code ec;
  if (!exec_path || !fs::is_regular_file(helper, ec)) {
    tools.missing.push_back({"git-remote-https", "git's https remote helper (git-remote-http) was not found on the host; "
                                                 "git in the guest cannot fetch over https: sudo apt-get install git"});
  } else {
    std::string dir = exec_path->string().substr(1);  // relative to the guest's root
    auto tool = describe_tool("git-remote-https", helper, dir + "/git-remote-http");
    if (!tool) {
      tools.missing.push_back({"git-remote-https", "the host's git-remote-http cannot be copied into the guest: " + tool.error().message});
    } else {
      tool->links.emplace_back(dir + "/git-remote-https", "git-remote-http");
      tools.found.push_back(std::move(*tool));
    }
  }
  return tools;
}

Result<void> add_guest_tools(CpioArchive& archive, const GuestTools& tools) {
  for (const auto& tool : tools.found) {
    auto bytes = read_host_file(tool.program);
    if (!bytes) return bytes.error();
    if (auto ok = archive.add_file(tool.guest_path, std::move(*bytes), 0755); !ok) return ok.error();
    for (const auto& [path, target] : tool.links)
      if (auto ok = archive.add_symlink(path, target); !ok) return ok.error();
  }
  return {};
}

}  // namespace lockroom::vm::image
