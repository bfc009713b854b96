// How the image builder reports steps that take more than a moment (downloading the kernel,
// unpacking it, building the initramfs). The CLI prints each line on stderr; the server turns
// them into $/progress. Called on the building thread.
#pragma once

#include <functional>
#include <string>

namespace lockroom::vm::image {

using Progress = std::function<void(const std::string& line)>;

}  // namespace lockroom::vm::image
