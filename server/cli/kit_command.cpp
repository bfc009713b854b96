// `lockroom kit ls|validate|show`: the kits this machine can use, checked without a sandbox.
//
//   lockroom kit ls [--json]                 every kit visible from here, with where it comes from
//   lockroom kit validate [KIT|FILE…]         read and stack kits; errors as file:line:column
//                                            (no arguments: every kit `ls` shows)
//   lockroom kit show KIT… [--json]          the merged plan a sandbox would get from these kits
// Kits are looked up as kit_catalog.h describes, with the current folder as the workspace.
#include <filesystem>
#include <iostream>

#include "server/cli/command.h"
#include "server/kits/kit_plan.h"

namespace lockroom::cli {

namespace {

kits::KitCatalog catalog_here() { return kits::KitCatalog::standard(std::filesystem::current_path()); }

int list_kits(bool as_json) {
  auto catalog = catalog_here();
  auto found = catalog.list();
  if (as_json) {
    kits::json out = kits::json::array();
    for (const auto& k : found) {
      auto spec = kits::load_kit_file(k.file);
      out.push_back({{"name", k.name},
                     {"file", k.file.string()},
                     {"origin", k.origin},
                     {"description", spec ? spec->description : ""},
                     {"valid", static_cast<bool>(spec)}});
    }
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  if (found.empty()) {
    std::cout << "no kits found; looked in:\n";
    for (const auto& r : catalog.roots()) std::cout << "  " << r.dir.string() << " (" << r.origin << ")\n";
    return 0;
  }
  for (const auto& k : found) {
    auto spec = kits::load_kit_file(k.file);
    std::string what = spec ? spec->description : "INVALID: run `lockroom kit validate " + k.name + "`";
    std::printf("%-16s %-10s %s\n", k.name.c_str(), k.origin.c_str(), what.c_str());
  }
  return 0;
}

int validate_kits(std::vector<std::string> refs) {
  auto catalog = catalog_here();
  if (refs.empty())
    for (const auto& k : catalog.list()) refs.push_back(k.name);
  int bad = 0;
  for (const auto& ref : refs) {
    auto plan = kits::resolve_kits(catalog, {ref});
    if (plan) {
      std::cout << ref << ": ok (" << plan->kits.size() << " kit" << (plan->kits.size() == 1 ? "" : "s") << " stacked)\n";
    } else {
      std::cerr << plan.error().message << std::endl;
      ++bad;
    }
  }
  return bad ? 1 : 0;
}

int show_plan(const std::vector<std::string>& refs, bool as_json) {
  auto plan = kits::resolve_kits(catalog_here(), refs);
  if (!plan) {
    std::cerr << plan.error().message << std::endl;
    return 1;
  }
  kits::json out = kits::plan_to_json(*plan);
  if (as_json) {
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  std::cout << "kits:      ";
  for (const auto& k : plan->kits) std::cout << k << " ";
  std::cout << "\npackages:  ";
  for (const auto& p : plan->packages) std::cout << p << " ";
  std::cout << "\nnpm:       ";
  for (const auto& p : plan->npm) std::cout << p << " ";
  std::cout << "\nenv:       " << plan->env.size() << " variable(s)\nfiles:     ";
  for (const auto& f : plan->files) std::cout << f.path << " ";
  std::cout << "\nsetup:\n";
  for (const auto& c : plan->setup) std::cout << "  [" << c.kit << "] " << c.run << "  (in " << c.cwd << ")\n";
  std::cout << "services:\n";
  for (const auto& s : plan->services) std::cout << "  [" << s.kit << "] " << s.name << ": " << s.run << "\n";
  std::cout << "network:   " << (plan->network ? out["network"].dump() : "unchanged (the request's or the default)") << "\nsecrets:   ";
  for (const auto& s : plan->secrets) std::cout << s.name << " ";
  std::cout << std::endl;
  return 0;
}

}  // namespace

void add_kit_command(CLI::App& app, CommandContext& ctx) {
  CLI::App* kit = app.add_subcommand("kit", "kits: declarative packages, files, env, setup, services, network and secrets");
  kit->require_subcommand(1);

  auto ls_json = std::make_shared<bool>(false);
  CLI::App* ls = kit->add_subcommand("ls", "the kits visible from the current folder");
  ls->add_flag("--json", *ls_json, "machine-readable output");
  ls->callback([&ctx, ls_json] { ctx.exit_code = list_kits(*ls_json); });

  auto validate_refs = std::make_shared<std::vector<std::string>>();
  CLI::App* validate = kit->add_subcommand("validate", "check kits (names or kit files); errors name file, line and column");
  validate->add_option("kits", *validate_refs, "kit names or paths (default: every kit `ls` shows)");
  validate->callback([&ctx, validate_refs] { ctx.exit_code = validate_kits(*validate_refs); });

  auto show_refs = std::make_shared<std::vector<std::string>>();
  auto show_json = std::make_shared<bool>(false);
  CLI::App* show = kit->add_subcommand("show", "the merged plan these kits give a sandbox");
  show->add_option("kits", *show_refs, "kit names or paths")->required();
  show->add_flag("--json", *show_json, "machine-readable output");
  show->callback([&ctx, show_refs, show_json] { ctx.exit_code = show_plan(*show_refs, *show_json); });
}

}  // namespace lockroom::cli
