// The uncompressed kernel (`vmlinux`) from a compressed `bzImage` (`vmlinuz`).
//
// Under TCG, decompressing an xz kernel inside the guest takes seconds of every cold boot;
// QEMU can instead load the ELF `vmlinux` directly through its PVH entry point (the kernel must
// be built with CONFIG_PVH, as Debian's is). bzimage_payload() is pure: it reads the setup header
// (payload_offset/payload_length) and says how the payload is compressed. extract_vmlinux() runs
// the host's `xz` on it. Blocking: CLI or worker thread.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "server/common/result.h"

namespace lockroom::vm::image {

struct BzImagePayload {
  std::string_view bytes;  // the compressed kernel, a view into the bzImage
  std::string format;      // "xz", "gzip", "zstd", "lz4", "lzma", "bzip2", "lzo" or "unknown"
};

Result<BzImagePayload> bzimage_payload(std::string_view bzimage);

// Writes `out` (an ELF file) from `vmlinuz`. Fails when the payload is not xz, when xz is
// missing, or when the result is not an ELF; callers then boot the bzImage itself.
Result<void> extract_vmlinux(const std::filesystem::path& vmlinuz, const std::filesystem::path& out);

}  // namespace lockroom::vm::image
