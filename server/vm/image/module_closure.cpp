// module_load_order; see module_closure.h.
#include "server/vm/image/module_closure.h"

#include <map>
#include <set>
#include <sstream>

namespace lockroom::vm::image {

namespace {

std::string normalise(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

struct DepEntry {
  std::string path;
  std::vector<std::string> deps;  // module names
};

// Parses "path.ko: dep1.ko dep2.ko" lines into name -> entry.
std::map<std::string, DepEntry> parse_modules_dep(std::string_view text) {
  std::map<std::string, DepEntry> table;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    DepEntry entry;
    entry.path = line.substr(0, colon);
    std::istringstream deps(line.substr(colon + 1));
    std::string dep;
    while (deps >> dep) entry.deps.push_back(module_name_of(dep));
    table.emplace(module_name_of(entry.path), std::move(entry));
  }
  return table;
}

std::set<std::string> parse_builtin(std::string_view text) {
  std::set<std::string> names;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) names.insert(module_name_of(line));
  return names;
}

class Walker {
 public:
  Walker(const std::map<std::string, DepEntry>& table, const std::set<std::string>& builtin)
      : table_(table), builtin_(builtin) {}

  Result<void> visit(const std::string& name, const std::string& wanted_by) {
    if (done_.count(name) || builtin_.count(name)) return {};
    if (active_.count(name))
      return make_error(ErrorCode::kInvalidInput, "kernel modules depend on each other in a cycle through \"" + name +
                                                      "\"; modules.dep is damaged: rebuild the image with --force");
    auto it = table_.find(name);
    if (it == table_.end()) {
      std::string who = wanted_by.empty() ? "the guest image needs it" : "\"" + wanted_by + "\" depends on it";
      return make_error(ErrorCode::kNotFound, "kernel module \"" + name + "\" is not in modules.dep (" + who +
                                                  "); check the module name, or that the kernel package ships it");
    }
    active_.insert(name);
    for (const auto& dep : it->second.deps)
      if (auto ok = visit(dep, name); !ok) return ok;
    active_.erase(name);
    done_.insert(name);
    order_.push_back(ModuleFile{name, it->second.path});
    return {};
  }

  std::vector<ModuleFile> take() { return std::move(order_); }

 private:
  const std::map<std::string, DepEntry>& table_;
  const std::set<std::string>& builtin_;
  std::set<std::string> active_;
  std::set<std::string> done_;
  std::vector<ModuleFile> order_;
};

}  // namespace

std::string module_name_of(std::string_view path) {
  std::size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::size_t ko = base.find(".ko");
  if (ko != std::string_view::npos) base = base.substr(0, ko);
  return normalise(base);
}

Result<std::vector<ModuleFile>> module_load_order(const std::vector<std::string>& wanted, std::string_view modules_dep,
                                                  std::string_view modules_builtin) {
  auto table = parse_modules_dep(modules_dep);
  auto builtin = parse_builtin(modules_builtin);
  Walker walker(table, builtin);
  for (const auto& name : wanted)
    if (auto ok = walker.visit(normalise(name), ""); !ok) return ok.error();
  return walker.take();
}

}  // namespace lockroom::vm::image
