// Assembling the guest's initramfs: busybox and its applet links, the kernel modules in load
// order, lockroom-agent and git with their shared libraries and loader, a few /etc files
// (gitconfig among them), and /init.
//
// plan_initramfs() turns the inputs into a CpioArchive (reading the host files it names);
// nothing else is put in the guest. Blocking file reads: CLI or worker thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/cpio_writer.h"
#include "server/vm/image/guest_git.h"
#include "server/vm/image/module_closure.h"

namespace lockroom::vm::image {

struct InitramfsInputs {
  std::filesystem::path busybox;            // statically linked
  std::vector<std::string> applets;         // names linked to busybox in /bin
  std::filesystem::path modules_dir;        // lib/modules/RELEASE of the unpacked kernel
  std::string release;                      // RELEASE
  std::vector<ModuleFile> modules;          // in load order
  std::filesystem::path agent;              // lockroom-agent on the host
  std::vector<std::string> agent_libs;      // absolute host paths, the loader included (the agent's and git's)
  std::string init;                         // the /init script
  std::optional<GuestGit> git;              // git for the guest (its libraries are in agent_libs)
};

Result<CpioArchive> plan_initramfs(const InitramfsInputs& inputs);

// The guest's /etc/hosts: localhost only. The guest has no DNS (protocol/channel.md, "Network"),
// so without it "localhost" would not resolve, and NO_PROXY=localhost would name nothing.
inline constexpr const char* kGuestHosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";

// The guest's users: root, and `agent` (uid and gid 1000, home /home/agent), whom guest programs
// run as unless they ask for root (guest/guest_user.h). /init makes its home and /workspace.
inline constexpr const char* kGuestPasswd = "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/home/agent:/bin/sh\n";
inline constexpr const char* kGuestGroup = "root:x:0:\nagent:x:1000:\n";

// Reads a whole host file (following symlinks); fails with the path in the message.
Result<std::string> read_host_file(const std::filesystem::path& path);

}  // namespace lockroom::vm::image
