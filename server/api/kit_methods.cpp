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

namespace lockroom::api {

using protocol::json;
using protocol::ParamReader;
using rpc::Reply;

namespace {

constexpr std::size_t kMaxKitsAsked = kits::kMaxKitsInStack;

// Every visible kit, first match per name, each read so a broken one says why.
json list_kits(const std::filesystem::path& workspace) {
  auto catalog = kits::KitCatalog::standard(workspace);
  json out = json::array();
  for (const auto& location : catalog.list()) {
    json kit{{"name", location.name}, {"origin", location.origin}, {"file", location.file.string()}};
    if (auto spec = kits::load_kit_file(location.file); spec) {
      kit["description"] = spec->description;
      kit["extends"] = spec->extends;
      kit["packages"] = spec->packages;
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
Result<json> validate_kits(const std::filesystem::path& workspace, const std::vector<std::string>& refs) {
  auto catalog = kits::KitCatalog::standard(workspace);
  auto plan = kits::resolve_kits(catalog, refs);
  if (!plan) return plan.error();
  if (auto supported = core::check_kit_plan_supported(*plan); !supported) return supported.error();
  return json{{"plan", kits::plan_to_json(*plan)}};
}

std::filesystem::path workspace_of(ParamReader& reader) {
  auto workspace = reader.string("workspace", false);
  return workspace ? std::filesystem::path(*workspace) : std::filesystem::path();
}

}  // namespace

void bind_kit_methods(rpc::Dispatcher& d, uv_loop_t* loop) {
  d.on_request("kit/list", [loop](const json& params, Reply reply) {
    ParamReader reader(params);
    auto workspace = workspace_of(reader);
    if (!reader.ok()) return reply.error(reader.error());
    run_blocking<json>(loop, [workspace]() -> Result<json> { return list_kits(workspace); },
                       [reply](Result<json> listed) {
                         if (!listed) return reply.error(to_rpc_error(listed.error()));
                         reply.result(std::move(*listed));
                       });
  });

  d.on_request("kit/validate", [loop](const json& params, Reply reply) {
    ParamReader reader(params);
    auto workspace = workspace_of(reader);
    auto refs = reader.strings("kits", true);
    if (reader.ok() && refs->empty()) reader.fail("kits", "must name at least one kit");
    if (reader.ok() && refs->size() > kMaxKitsAsked)
      reader.fail("kits", "names " + std::to_string(refs->size()) + " kits; at most " + std::to_string(kMaxKitsAsked) + " fit in one stack");
    if (!reader.ok()) return reply.error(reader.error());
    run_blocking<json>(loop, [workspace, refs = *refs]() { return validate_kits(workspace, refs); },
                       [reply](Result<json> checked) {
                         if (!checked) return reply.error(to_rpc_error(checked.error()));
                         reply.result(std::move(*checked));
                       });
  });
}

}  // namespace lockroom::api
