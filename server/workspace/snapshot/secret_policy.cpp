// The secret filter (see secret_policy.h).
#include "server/workspace/snapshot/secret_policy.h"

namespace lockroom::workspace::snapshot {
namespace {

template <typename Texts>
Result<std::vector<PathPattern>> parse_all(const Texts& texts) {
  std::vector<PathPattern> out;
  out.reserve(texts.size());
  for (const auto& text : texts) {
    auto parsed = PathPattern::parse(text);
    if (!parsed) return parsed.error();
    out.push_back(std::move(parsed).value());
  }
  return out;
}

}  // namespace

Result<SecretFilter> SecretFilter::compile(const SecretPolicy& policy) {
  SecretFilter filter;
  if (!policy.replace_defaults) {
    std::vector<std::string_view> texts;
    for (const auto& d : kDefaultSecretPatterns) texts.push_back(d.pattern);
    auto defaults = parse_all(texts);
    auto exceptions = parse_all(kDefaultSecretExceptions);
    if (!defaults || !exceptions) return make_error(ErrorCode::kInternal, "the default secret patterns do not parse");
    filter.defaults_ = std::move(defaults).value();
    filter.default_exceptions_ = std::move(exceptions).value();
  }
  auto withhold = parse_all(policy.withhold);
  if (!withhold) return withhold.error();
  auto allow = parse_all(policy.allow);
  if (!allow) return allow.error();
  filter.withhold_ = std::move(withhold).value();
  filter.allow_ = std::move(allow).value();
  return filter;
}

bool SecretFilter::any_matches(const std::vector<PathPattern>& patterns, const std::vector<std::string_view>& path) {
  for (const auto& p : patterns) {
    if (p.matches(path)) return true;
  }
  return false;
}

bool SecretFilter::withheld(std::string_view path) const {
  const auto components = split_path(path);
  const bool by_default = any_matches(defaults_, components) && !any_matches(default_exceptions_, components);
  if (!by_default && !any_matches(withhold_, components)) return false;
  return !any_matches(allow_, components);
}

bool SecretFilter::any_matches_itself(const std::vector<PathPattern>& patterns,
                                      const std::vector<std::string_view>& path, bool is_folder) {
  if (path.empty()) return false;
  for (const auto& p : patterns) {
    if ((is_folder || !p.directory_only()) && p.matches_ending_at(path, path.size())) return true;
  }
  return false;
}

SecretFilter::FolderMatches SecretFilter::enter_folder(const FolderMatches& parent,
                                                       const std::vector<std::string_view>& folder) const {
  FolderMatches out;
  out.defaults = parent.defaults || any_matches_itself(defaults_, folder, true);
  out.default_exceptions = parent.default_exceptions || any_matches_itself(default_exceptions_, folder, true);
  out.withhold = parent.withhold || any_matches_itself(withhold_, folder, true);
  out.allow = parent.allow || any_matches_itself(allow_, folder, true);
  return out;
}

bool SecretFilter::withheld_in(const FolderMatches& folder, const std::vector<std::string_view>& path) const {
  const bool by_default = (folder.defaults || any_matches_itself(defaults_, path, false)) &&
                          !(folder.default_exceptions || any_matches_itself(default_exceptions_, path, false));
  if (!by_default && !(folder.withhold || any_matches_itself(withhold_, path, false))) return false;
  return !(folder.allow || any_matches_itself(allow_, path, false));
}

}  // namespace lockroom::workspace::snapshot
