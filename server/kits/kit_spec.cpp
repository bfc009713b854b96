// Reading kit.yaml; see kit_spec.h.
#include "server/kits/kit_spec.h"

#include <filesystem>

#include "server/egress/policy/json_fields.h"
#include "server/egress/policy/policy_json.h"
#include "server/kits/npm_spec.h"

namespace lockroom::kits {

namespace {

using egress::field_error;
using egress::type_error;

Result<std::string> text(const json& v, const std::string& path, bool allow_empty = false) {
  if (!v.is_string()) return type_error(path, "text", v);
  const auto& s = v.get_ref<const std::string&>();
  if (!allow_empty && s.empty()) return field_error(path, "must not be empty");
  if (s.find('\0') != std::string::npos) return field_error(path, "must not contain a NUL character");
  return s;
}

Result<int> positive(const json& v, const std::string& path, int max) {
  if (!v.is_number_integer()) return type_error(path, "a whole number", v);
  auto n = v.get<std::int64_t>();
  if (n < 1 || n > max) return field_error(path, "must be between 1 and " + std::to_string(max) + ", got " + std::to_string(n));
  return static_cast<int>(n);
}

Result<std::vector<std::string>> text_list(const json& v, const std::string& path, std::size_t max) {
  if (!v.is_array()) return type_error(path, "a list", v);
  if (v.size() > max) return field_error(path, "has " + std::to_string(v.size()) + " entries; at most " + std::to_string(max));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto s = text(v[i], child_path(path, i));
    if (!s) return s.error();
    out.push_back(std::move(*s));
  }
  return out;
}

// An absolute guest path without "." or ".." components, normalised.
Result<std::string> guest_path(const json& v, const std::string& path) {
  auto s = text(v, path);
  if (!s) return s;
  std::filesystem::path p(*s);
  if (!p.is_absolute()) return field_error(path, "must be an absolute path in the guest, got \"" + *s + "\"");
  for (const auto& part : p)
    if (part == "." || part == "..") return field_error(path, "must not contain \".\" or \"..\", got \"" + *s + "\"");
  std::string norm = p.lexically_normal().string();
  if (norm.size() > 1 && norm.back() == '/') norm.pop_back();
  return norm;
}

Result<std::uint32_t> file_mode(const json& v, const std::string& path) {
  std::string digits;
  if (v.is_string()) digits = v.get<std::string>();
  else if (v.is_number_integer()) digits = std::to_string(v.get<std::int64_t>());  // 644 written without the 0
  else return type_error(path, "octal digits such as 0644", v);
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("01234567") != std::string::npos)
    return field_error(path, "must be octal digits such as 0644, got \"" + digits + "\"");
  auto mode = static_cast<std::uint32_t>(std::stoul(digits, nullptr, 8));
  if (mode & 07000) return field_error(path, "setuid, setgid and sticky bits are not allowed, got " + digits);
  return mode;
}

Result<KitUser> kit_user(const json& v, const std::string& path) {
  auto s = text(v, path);
  if (!s) return s.error();
  if (*s == "agent") return KitUser::kAgent;
  if (*s == "root") return KitUser::kRoot;
  return field_error(path, "must be \"agent\" (an unprivileged user owning /workspace and /home/agent) or \"root\", got \"" + *s + "\"");
}

Result<KitFile> read_file(const json& v, const std::string& path) {
  if (!v.is_object()) return type_error(path, "an object {path, content, mode?, user?}", v);
  if (auto r = egress::reject_unknown_fields(v, {"path", "content", "mode", "user"}, path); !r) return r.error();
  KitFile f;
  if (!v.contains("path")) return field_error(path + ".path", "is required");
  auto p = guest_path(v["path"], path + ".path");
  if (!p) return p.error();
  if (*p == "/") return field_error(path + ".path", "must name a file, not /");
  f.path = *p;
  if (!v.contains("content")) return field_error(path + ".content", "is required");
  auto c = text(v["content"], path + ".content", true);
  if (!c) return c.error();
  if (c->size() > kMaxKitFileBytes)
    return field_error(path + ".content", "is " + std::to_string(c->size()) + " bytes; at most " + std::to_string(kMaxKitFileBytes));
  f.content = *c;
  if (v.contains("mode")) {
    auto m = file_mode(v["mode"], path + ".mode");
    if (!m) return m.error();
    f.mode = *m;
  }
  f.user = default_file_owner(f.path);
  if (v.contains("user")) {
    auto u = kit_user(v["user"], path + ".user");
    if (!u) return u.error();
    f.user = *u;
  }
  return f;
}

Result<KitCommand> read_command(const json& v, const std::string& path) {
  KitCommand c;
  if (v.is_string()) {
    auto s = text(v, path);
    if (!s) return s.error();
    c.run = *s;
    return c;
  }
  if (!v.is_object()) return type_error(path, "a command line or {run, cwd?, timeoutSeconds?, user?}", v);
  if (auto r = egress::reject_unknown_fields(v, {"run", "cwd", "timeoutSeconds", "user"}, path); !r) return r.error();
  if (!v.contains("run")) return field_error(path + ".run", "is required");
  auto s = text(v["run"], path + ".run");
  if (!s) return s.error();
  c.run = *s;
  if (v.contains("cwd")) {
    auto p = guest_path(v["cwd"], path + ".cwd");
    if (!p) return p.error();
    c.cwd = *p;
  }
  if (v.contains("timeoutSeconds")) {
    auto t = positive(v["timeoutSeconds"], path + ".timeoutSeconds", 24 * 3600);
    if (!t) return t.error();
    c.timeout_seconds = *t;
  }
  if (v.contains("user")) {
    auto u = kit_user(v["user"], path + ".user");
    if (!u) return u.error();
    c.user = *u;
  }
  return c;
}

Result<KitService> read_service(const json& v, const std::string& path) {
  if (!v.is_object()) return type_error(path, "an object {name, run, cwd?, user?}", v);
  if (auto r = egress::reject_unknown_fields(v, {"name", "run", "cwd", "user"}, path); !r) return r.error();
  KitService s;
  if (!v.contains("name")) return field_error(path + ".name", "is required");
  auto n = text(v["name"], path + ".name");
  if (!n) return n.error();
  if (!valid_kit_name(*n)) return field_error(path + ".name", "must be lower-case letters, digits and '-', got \"" + *n + "\"");
  s.name = *n;
  if (!v.contains("run")) return field_error(path + ".run", "is required");
  auto r = text(v["run"], path + ".run");
  if (!r) return r.error();
  s.run = *r;
  if (v.contains("cwd")) {
    auto p = guest_path(v["cwd"], path + ".cwd");
    if (!p) return p.error();
    s.cwd = *p;
  }
  if (v.contains("user")) {
    auto u = kit_user(v["user"], path + ".user");
    if (!u) return u.error();
    s.user = *u;
  }
  return s;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// A Debian package name (Policy 5.6.1), optionally with ":arch".
bool valid_package_name(const std::string& name) {
  std::string base = name.substr(0, name.find(':'));
  if (base.size() < 2 || base.size() > 128) return false;
  if (!((base[0] >= 'a' && base[0] <= 'z') || (base[0] >= '0' && base[0] <= '9'))) return false;
  for (char c : base)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')) return false;
  return true;
}

Result<void> read_fields(const json& root, KitSpec& kit, const std::filesystem::path& kit_dir) {
  if (!root.is_object()) return type_error("kit", "a mapping with at least \"name\"", root);
  if (auto r = egress::reject_unknown_fields(root, {"name", "description", "extends", "packages", "npm", "env", "files", "setup", "services",
                                                    "network", "secrets", "workspace", "resources"},
                                             "");
      !r)
    return make_error(ErrorCode::kInvalidInput, r.error().message.substr(1));  // drop the leading '.' of a root path
  if (!root.contains("name")) return field_error("name", "is required");
  auto name = text(root["name"], "name");
  if (!name) return name.error();
  if (!valid_kit_name(*name)) return field_error("name", "must be lower-case letters, digits and '-' (at most 64), got \"" + *name + "\"");
  kit.name = *name;
  if (root.contains("description")) {
    auto d = text(root["description"], "description", true);
    if (!d) return d.error();
    kit.description = *d;
  }
  if (root.contains("extends")) {
    const json& e = root["extends"];
    auto list = e.is_string() ? text_list(json::array({e}), "extends", 16) : text_list(e, "extends", 16);
    if (!list) return list.error();
    for (std::size_t i = 0; i < list->size(); ++i)
      if (!valid_kit_name((*list)[i])) return field_error(child_path("extends", i), "\"" + (*list)[i] + "\" is not a kit name");
    kit.extends = *list;
  }
  if (root.contains("packages")) {
    auto list = text_list(root["packages"], "packages", kMaxKitPackages);
    if (!list) return list.error();
    for (std::size_t i = 0; i < list->size(); ++i)
      if (!valid_package_name((*list)[i]))
        return field_error(child_path("packages", i), "\"" + (*list)[i] + "\" is not a Debian package name");
    kit.packages = *list;
  }
  if (root.contains("npm")) {
    auto list = text_list(root["npm"], "npm", kMaxNpmSpecs);
    if (!list) return list.error();
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto spec = normalize_npm_spec((*list)[i], kit_dir);
      if (!spec) return field_error(child_path("npm", i), spec.error().message);
      for (std::size_t j = 0; j < kit.npm.size(); ++j) {
        auto a = npm_spec_name(kit.npm[j]), b = npm_spec_name(*spec);
        if (kit.npm[j] == *spec || (a && b && *a == *b))
          return field_error(child_path("npm", i), "\"" + (b ? *b : *spec) + "\" is already asked for at npm[" + std::to_string(j) + "]");
      }
      kit.npm.push_back(std::move(*spec));
    }
  }
  if (root.contains("env")) {
    const json& env = root["env"];
    if (!env.is_object()) return type_error("env", "a mapping of NAME: value", env);
    if (env.size() > kMaxKitEnv) return field_error("env", "has more than " + std::to_string(kMaxKitEnv) + " variables");
    for (const auto& [k, v] : env.items()) {
      std::string path = child_path("env", k);
      if (!valid_env_name(k)) return field_error(path, "is not a valid environment variable name");
      if (k.rfind("LOCKROOM_", 0) == 0) return field_error(path, "LOCKROOM_ variables are lockroom's own");
      if (v.is_number() || v.is_boolean()) kit.env[k] = v.dump();  // `DEBUG: 1` means "1"
      else {
        auto s = text(v, path, true);
        if (!s) return s.error();
        kit.env[k] = *s;
      }
    }
  }
  if (root.contains("files")) {
    const json& files = root["files"];
    if (!files.is_array()) return type_error("files", "a list", files);
    if (files.size() > kMaxKitFiles) return field_error("files", "has more than " + std::to_string(kMaxKitFiles) + " files");
    for (std::size_t i = 0; i < files.size(); ++i) {
      auto f = read_file(files[i], child_path("files", i));
      if (!f) return f.error();
      for (const auto& other : kit.files)
        if (other.path == f->path) return field_error(child_path("files", i) + ".path", "\"" + f->path + "\" is written twice");
      kit.files.push_back(std::move(*f));
    }
  }
  if (root.contains("setup")) {
    const json& setup = root["setup"];
    if (!setup.is_array()) return type_error("setup", "a list of commands", setup);
    if (setup.size() > kMaxKitCommands) return field_error("setup", "has more than " + std::to_string(kMaxKitCommands) + " commands");
    for (std::size_t i = 0; i < setup.size(); ++i) {
      auto c = read_command(setup[i], child_path("setup", i));
      if (!c) return c.error();
      kit.setup.push_back(std::move(*c));
    }
  }
  if (root.contains("services")) {
    const json& services = root["services"];
    if (!services.is_array()) return type_error("services", "a list", services);
    if (services.size() > kMaxKitCommands) return field_error("services", "has more than " + std::to_string(kMaxKitCommands) + " services");
    for (std::size_t i = 0; i < services.size(); ++i) {
      auto s = read_service(services[i], child_path("services", i));
      if (!s) return s.error();
      for (const auto& other : kit.services)
        if (other.name == s->name) return field_error(child_path("services", i) + ".name", "\"" + s->name + "\" is used twice");
      kit.services.push_back(std::move(*s));
    }
  }
  if (root.contains("network")) {
    auto policy = egress::parse_policy(root["network"], "network");
    if (!policy) return policy.error();
    kit.network = std::move(*policy);
  }
  if (root.contains("secrets")) {
    auto secrets = egress::parse_secrets(root["secrets"], "secrets");
    if (!secrets) return secrets.error();
    kit.secrets = std::move(*secrets);
  }
  if (root.contains("workspace")) {
    const json& w = root["workspace"];
    if (!w.is_object()) return type_error("workspace", "a mapping {withhold?, allow?}", w);
    if (auto r = egress::reject_unknown_fields(w, {"withhold", "allow"}, "workspace"); !r) return r.error();
    if (w.contains("withhold")) {
      auto list = text_list(w["withhold"], "workspace.withhold", 256);
      if (!list) return list.error();
      kit.withhold = *list;
    }
    if (w.contains("allow")) {
      auto list = text_list(w["allow"], "workspace.allow", 256);
      if (!list) return list.error();
      kit.allow = *list;
    }
  }
  if (root.contains("resources")) {
    const json& r = root["resources"];
    if (!r.is_object()) return type_error("resources", "a mapping", r);
    if (auto u = egress::reject_unknown_fields(r, {"cpus", "memoryMiB", "diskMiB", "timeoutSeconds"}, "resources"); !u) return u.error();
    struct Field {
      const char* key;
      std::optional<int>* out;
      int max;
    };
    for (Field f : {Field{"cpus", &kit.resources.cpus, 64}, Field{"memoryMiB", &kit.resources.memory_mib, 1 << 20},
                    Field{"diskMiB", &kit.resources.disk_mib, 1 << 22}, Field{"timeoutSeconds", &kit.resources.timeout_seconds, 7 * 24 * 3600}}) {
      if (!r.contains(f.key)) continue;
      auto n = positive(r[f.key], child_path("resources", f.key), f.max);
      if (!n) return n.error();
      *f.out = *n;
    }
  }
  return {};
}

}  // namespace

KitUser default_file_owner(const std::string& guest_path) {
  for (std::string_view home : {"/home/agent", "/workspace"})
    if (guest_path.size() > home.size() && guest_path.compare(0, home.size(), home) == 0 && guest_path[home.size()] == '/')
      return KitUser::kAgent;
  return KitUser::kRoot;
}

bool valid_kit_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name.front() == '-' || name.back() == '-') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

Result<KitSpec> read_kit(const YamlDocument& doc) {
  KitSpec kit;
  kit.source = doc.file;
  // A file: spec's relative path is the kit file's neighbour: joined to its folder, made absolute
  // against the working directory, never read here. Without one, such a spec is refused.
  std::error_code ec;
  std::filesystem::path kit_dir = std::filesystem::path(doc.file).parent_path();
  kit_dir = std::filesystem::absolute(kit_dir.empty() ? std::filesystem::path(".") : kit_dir, ec);
  if (ec) kit_dir.clear();
  if (auto r = read_fields(doc.value, kit, kit_dir); !r) return make_error(r.error().code, doc.locate(r.error().message));
  return kit;
}

Result<KitSpec> parse_kit(std::string_view text, const std::string& file) {
  auto doc = parse_yaml(text, file);
  if (!doc) return doc.error();
  return read_kit(*doc);
}

}  // namespace lockroom::kits
