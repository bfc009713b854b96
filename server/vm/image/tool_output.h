// The last lines of what a tool (apt-get, npm) printed, for an error message that shows why it
// failed without its whole log.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace lockroom::vm::image {

// The last `lines` non-empty lines of `text`, each on a new line indented by four spaces.
inline std::string last_lines(const std::string& text, std::size_t lines) {
  std::vector<std::string> all;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n    " + all[i];
  return out;
}

}  // namespace lockroom::vm::image
