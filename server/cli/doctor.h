// `lockroom doctor`: what this machine can do, in plain words or as JSON.
//
// probe_machine() gathers the facts (QEMU and its microvm machine, KVM usability and the
// accelerator lockroom will pick, busybox for the guest image, where caches and state live and
// how much disk they have); render_* turn them into text or JSON. CLI thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/common/paths.h"
#include "server/vm/accel.h"

namespace lockroom::cli {

struct DiskInfo {
  std::string path;
  std::optional<std::uint64_t> free_bytes;  // of the nearest existing ancestor
};

struct MachineReport {
  std::string lockroom_version;
  std::string qemu_path;     // empty when not found
  std::string qemu_version;  // e.g. "7.2.19"
  bool qemu_microvm = false;
  vm::HostVirt host_virt;
  vm::AccelChoice accel;
  std::string busybox_path;  // a static busybox for the guest image, empty when missing
  bool apt_available = false;  // apt-get + dpkg-deb, to fetch the guest kernel
  std::vector<std::string> guest_tools_missing;  // optional guest programs (curl, git over https) the host lacks, with the fix
  DiskInfo cache;
  DiskInfo state;

  bool ready() const { return !qemu_path.empty() && qemu_microvm; }
};

MachineReport probe_machine(const std::string& lockroom_version);
std::string render_text(const MachineReport& report);
nlohmann::json render_json(const MachineReport& report);

}  // namespace lockroom::cli
