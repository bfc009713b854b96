// Optional client tools in the guest image: `curl` (an HTTPS client agents and their scripts
// expect, and the one the egress integration tests drive) and git's https remote helper (so
// `git clone/fetch https://…` works through the sandbox's proxy).
//
// find_guest_tools() looks for the host's /usr/bin/curl and for git-remote-http in git's exec
// path, each with the shared libraries its loader resolves (ldd, as for the agent and git). A tool
// the host lacks is not an error: it is listed in `missing` with the package that provides it, the
// image is built without it, and the image manifest says so. add_guest_tools() copies the found
// programs in (their libraries go in with the agent's, one copy of each). Blocking (runs ldd and
// git): CLI or worker thread.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/cpio_writer.h"

namespace lockroom::vm::image {

struct GuestTool {
  std::string name;                  // "curl", "git-remote-https"
  std::filesystem::path program;     // the host binary (symlinks resolved)
  std::string guest_path;            // where it goes in the guest, without the leading '/'
  std::vector<std::pair<std::string, std::string>> links;  // guest path → symlink target
  std::vector<std::string> libs;     // absolute host paths, the loader included
};

struct MissingTool {
  std::string name;
  std::string reason;  // what is missing and how to install it
};

struct GuestTools {
  std::vector<GuestTool> found;
  std::vector<MissingTool> missing;
};

// Never fails: what cannot be found is reported in `missing`.
GuestTools find_guest_tools();

// Adds the found programs and their links to `archive` (libraries are added with the agent's).
Result<void> add_guest_tools(CpioArchive& archive, const GuestTools& tools);

}  // namespace lockroom::vm::image
