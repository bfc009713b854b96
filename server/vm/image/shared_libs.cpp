// parse_ldd / shared_libraries; see shared_libs.h.
#include "server/vm/image/shared_libs.h"

#include <algorithm>
#include <sstream>

#include "server/common/subprocess.h"

namespace lockroom::vm::image {

Result<std::vector<std::string>> parse_ldd(std::string_view text, const std::string& program) {
  std::vector<std::string> libs;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("statically linked") != std::string::npos || line.find("not a dynamic executable") != std::string::npos)
      return std::vector<std::string>{};
    std::istringstream words(line);
    std::string first, arrow, target;
    if (!(words >> first)) continue;
    if (words >> arrow && arrow == "=>") {
      words >> target;
      if (target == "not" || target.empty())
        return make_error(ErrorCode::kUnavailable, program + " needs " + first +
                                                       ", which the host's loader cannot find; install the library or "
                                                       "build the program with it");
      if (target.front() == '/') libs.push_back(target);
    } else if (first.front() == '/' && first.back() != ':') {
      libs.push_back(first);  // the dynamic loader, listed by its own path
    }
  }
  std::sort(libs.begin(), libs.end());
  libs.erase(std::unique(libs.begin(), libs.end()), libs.end());
  return libs;
}

Result<std::vector<std::string>> shared_libraries(const std::filesystem::path& program) {
  auto run = run_capture({"ldd", program.string()});
  if (!run)
    return make_error(ErrorCode::kUnavailable, "cannot run ldd to find the libraries of " + program.string() + ": " +
                                                   run.error().message + " (install libc-bin)");
  // ldd exits 1 for a static program; its text says so and parse_ldd handles it.
  return parse_ldd(run->output, program.string());
}

}  // namespace lockroom::vm::image
