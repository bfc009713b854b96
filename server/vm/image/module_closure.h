// Which kernel modules a guest must load, and in which order.
//
// Pure: given the module names a guest needs and the text of the kernel's `modules.dep` (as
// written by depmod), returns every module file to load, dependencies first, each once — so
// `virtio_ring` comes before `virtio`, and `virtio` before `virtio_mmio`. Names compare the way
// the kernel compares them (`-` and `_` are the same). Modules listed in `modules.builtin` are
// part of the kernel and are skipped. Used by the image builder on the CLI thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::vm::image {

struct ModuleFile {
  std::string name;  // normalised module name, e.g. "virtio_ring"
  std::string path;  // as in modules.dep, relative to lib/modules/VERSION, e.g. "kernel/drivers/virtio/virtio_ring.ko"
};

// "kernel/drivers/char/virtio_console.ko" -> "virtio_console"; "virtio-rng.ko.xz" -> "virtio_rng".
std::string module_name_of(std::string_view path);

// The load order for `wanted`: each module after everything it depends on, each exactly once.
// Fails, naming the module, when a wanted module or a dependency is not in modules.dep, or when
// the dependencies form a cycle. `modules_builtin` is the text of modules.builtin (may be empty).
Result<std::vector<ModuleFile>> module_load_order(const std::vector<std::string>& wanted, std::string_view modules_dep,
                                                  std::string_view modules_builtin = {});

}  // namespace lockroom::vm::image
