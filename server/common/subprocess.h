// Running a short host program synchronously and capturing its output.
//
// For quick probes (`qemu-system-x86_64 --version`) and build steps, never for guests. The
// program is found on PATH, gets no stdin, and its stdout and stderr are captured together up
// to a bound. Blocking: call it only from the CLI or a worker thread, never on the loop.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace lockroom {

struct ProcessOutput {
  int exit_code = -1;  // -1 when killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

Result<ProcessOutput> run_capture(const std::vector<std::string>& argv, std::size_t max_output = 1u << 20);
// The full path of `program` on PATH, if it is there and executable.
std::optional<std::filesystem::path> find_program(const std::string& program);

}  // namespace lockroom
