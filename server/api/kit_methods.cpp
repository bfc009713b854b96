// kit/list and kit/validate; see kit_methods.h.
#include "server/api/kit_methods.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "protocol/params.h"
#include "server/api/error_map.h"
#include "server/common/uv_work.h"
#include "server/core/kit_request.h"
#include "server/kits/kit_catalog.h"
#include "server/kits/kit_plan.h"
#include "server/rpc/progress.h"

namespace lockroom::api {

using protocol::json;
using protocol::ParamReader;
using rpc::Reply;

namespace {

constexpr std::size_t kMaxKitsAsked = kits::kMaxKitsInStack;

// Every visible kit, first match per name, each read so a broken one says why.
json list_kits(const std::filesystem::path& workspace, const ClientEnv& env) {
  auto catalog = kits::KitCatalog::standard_for(workspace, env.get());
  json out = json::array();
  for (const auto& location : catalog.list()) {
    json kit{{"name", location.name}, {"origin", location.origin}, {"file", location.file.string()}};
    if (auto spec = kits::load_kit_file(location.file); spec) {
      kit["description"] = spec->description;
      kit["extends"] = spec->extends;
      kit["packages"] = spec->packages;
      kit["npm"] = spec->npm;
    } else {
      kit["error"] = spec.error().message;
    }
    out.push_back(std::move(kit));
  }
  json searched = json::array();
  for (const auto& root : catalog.roots()) searched.push_back({{"dir", root.dir.string()}, {"origin", root.origin}});
  return json{{"kits", std::move(out)}, {"searched", std::move(searched)}};
}

// The stack resolved and merged, and refused the way sandbox/create would refuse it.
Result<json> validate_kits(const std::filesystem::path& workspace, const std::vector<std::string>& refs, const ClientEnv& env) {
  auto catalog = kits::KitCatalog::standard_for(workspace, env.get());
  auto plan = kits::resolve_kits(catalog, refs);
  if (!plan) return with_field(plan.error(), "kits");
  if (auto supported = core::check_kit_plan_supported(*plan); !supported) return with_field(supported.error(), "kits");
  return json{{"plan", kits::plan_to_json(*plan)}};
}

std::filesystem::path workspace_of(ParamReader& reader) {
  auto workspace = reader.string("workspace", false);
  return workspace ? std::filesystem::path(*workspace) : std::filesystem::path();
}

}  // namespace

void bind_kit_methods(rpc::Dispatcher& d, uv_loop_t* loop, ClientEnv env) {
  d.on_request("kit/list", [loop, env](const json& params, Reply reply) {
    ParamReader reader(params);
    auto workspace = workspace_of(reader);
    reader.reject_unknown();
    if (!reader.ok()) return reply.error(reader.error());
    run_blocking<json>(loop, [workspace, env]() -> Result<json> { return list_kits(workspace, env); },
                       [reply](Result<json> listed) {
                         if (!listed) return reply.error(to_rpc_error(listed.error()));
                         reply.result(std::move(*listed));
                       });
  });

  d.on_request("kit/validate", [loop, &d, env](const json& params, Reply reply) {
    ParamReader reader(params);
    auto workspace = workspace_of(reader);
    auto refs = reader.strings("kits", true);
    if (reader.ok() && refs->empty()) reader.fail("kits", "must name at least one kit");
    if (reader.ok() && refs->size() > kMaxKitsAsked)
      reader.fail("kits", "names " + std::to_string(refs->size()) + " kits; at most " + std::to_string(kMaxKitsAsked) + " fit in one stack");
    reader.reject_unknown();
    if (!reader.ok()) return reply.error(reader.error());
    // Reading kit files can be slow (a network file system): the editor may show progress. The
    // reading cannot be stopped, so the progress is not cancellable.
    auto progress = std::make_shared<rpc::WorkDoneProgress>(d, params);
    std::string names;
    for (const auto& ref : *refs) names += (names.empty() ? "" : ", ") + ref;
    progress->begin("Validating kits", 0);
    progress->report("reading " + names, 10);
    run_blocking<json>(loop, [workspace, refs = *refs, env]() { return validate_kits(workspace, refs, env); },
                       [reply, progress](Result<json> checked) {
                         progress->end(checked ? "valid" : "not valid");
                         if (!checked) return reply.error(to_rpc_error(checked.error()));
                         reply.result(std::move(*checked));
                       });
  });
}

}  // namespace lockroom::api
