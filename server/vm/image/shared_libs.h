// The shared libraries a dynamic ELF program needs, so they can be copied into the guest image.
//
// parse_ldd() is pure: it reads `ldd` output ("libc.so.6 => /lib/…/libc.so.6 (0x…)", the loader
// "/lib64/ld-linux-x86-64.so.2 (0x…)"), skips the kernel's vDSO, and fails on "not found".
// shared_libraries() runs the host's `ldd` on a program lockroom built itself (never on guest
// output). A static program needs nothing. Blocking: CLI or worker thread.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::vm::image {

// Absolute paths as the program's loader will look them up, the loader itself included.
Result<std::vector<std::string>> parse_ldd(std::string_view ldd_output, const std::string& program);

Result<std::vector<std::string>> shared_libraries(const std::filesystem::path& program);

}  // namespace lockroom::vm::image
