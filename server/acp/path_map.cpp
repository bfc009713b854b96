// PathMap; see path_map.h.
#include "server/acp/path_map.h"

#include <cctype>

namespace lockroom::acp {

namespace {

// `path` is `root` or below it: the rest after `root` ("" or "/…"), else nullopt.
std::optional<std::string> below(const std::string& path, const std::string& root) {
  if (path.compare(0, root.size(), root) != 0) return std::nullopt;
  if (path.size() == root.size()) return std::string();
  if (path[root.size()] != '/') return std::nullopt;
  return path.substr(root.size());
}

// A path as it appears in a file:// URI: RFC 3986 path characters kept, the rest %XX.
std::string uri_escape(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::string_view("/-._~!$&'()*+,;=:@").find(static_cast<char>(c)) != std::string_view::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string map_uri(const std::string& uri, const std::string& from, const std::string& to) {
  static const std::string scheme = "file://";
  if (uri.compare(0, scheme.size(), scheme) != 0) return uri;
  std::string path = uri.substr(scheme.size());
  // A URI's path is percent-encoded; one written without the encoding keeps its own style.
  for (const auto& [a, b] : {std::pair{uri_escape(from), uri_escape(to)}, std::pair{from, to}}) {
    if (auto rest = below(path, a)) return scheme + b + *rest;
  }
  return uri;
}

// Replaces `from` with `to` in text wherever it stands as a whole path prefix (followed by '/',
// the end, or a character that cannot continue a file name in prose).
std::string replace_prefix_in_text(const std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    std::size_t hit = text.find(from, pos);
    if (hit == std::string::npos) break;
    std::size_t after = hit + from.size();
    bool ends = after == text.size() || text[after] == '/' ||
                std::string_view(" \t\n\r\"'`),;:]>").find(text[after]) != std::string_view::npos;
    out.append(text, pos, hit - pos);
    out.append(ends ? to : from);
    pos = after;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

void content_block_to_host(const PathMap& map, json& block) {
  if (!block.is_object()) return;
  if (block.contains("uri") && block["uri"].is_string()) block["uri"] = map.uri_to_host(block["uri"].get<std::string>());
  if (block.contains("resource") && block["resource"].is_object()) {
    json& r = block["resource"];
    if (r.contains("uri") && r["uri"].is_string()) r["uri"] = map.uri_to_host(r["uri"].get<std::string>());
  }
}

// String values that are workspace paths, at any depth.
void raw_to_host(const PathMap& map, json& value) {
  if (value.is_string()) {
    if (auto host = map.to_host(value.get<std::string>())) value = *host;
  } else if (value.is_object() || value.is_array()) {
    for (auto& item : value) raw_to_host(map, item);
  }
}

}  // namespace

PathMap::PathMap(std::string host_root, std::string guest_root) : host_(std::move(host_root)), guest_(std::move(guest_root)) {
  while (host_.size() > 1 && host_.back() == '/') host_.pop_back();
  while (guest_.size() > 1 && guest_.back() == '/') guest_.pop_back();
}

std::optional<std::string> PathMap::to_host(const std::string& guest_path) const {
  if (auto rest = below(guest_path, guest_)) return host_ + *rest;
  return std::nullopt;
}

std::optional<std::string> PathMap::to_guest(const std::string& host_path) const {
  if (auto rest = below(host_path, host_)) return guest_ + *rest;
  return std::nullopt;
}

std::string PathMap::uri_to_host(const std::string& uri) const { return map_uri(uri, guest_, host_); }
std::string PathMap::uri_to_guest(const std::string& uri) const { return map_uri(uri, host_, guest_); }

void PathMap::prompt_to_guest(json& prompt) const {
  if (!prompt.is_array()) return;
  for (json& block : prompt) {
    if (!block.is_object()) continue;
    if (block.contains("uri") && block["uri"].is_string()) block["uri"] = uri_to_guest(block["uri"].get<std::string>());
    if (block.contains("resource") && block["resource"].is_object()) {
      json& r = block["resource"];
      if (r.contains("uri") && r["uri"].is_string()) r["uri"] = uri_to_guest(r["uri"].get<std::string>());
      if (r.contains("text") && r["text"].is_string()) r["text"] = replace_prefix_in_text(r["text"].get<std::string>(), host_, guest_);
    }
    if (block.value("type", "") == "text" && block.contains("text") && block["text"].is_string())
      block["text"] = replace_prefix_in_text(block["text"].get<std::string>(), host_, guest_);
  }
}

void PathMap::update_to_host(json& update) const {
  if (!update.is_object()) return;
  if (update.contains("locations") && update["locations"].is_array()) {
    for (json& location : update["locations"]) {
      if (location.is_object() && location.contains("path") && location["path"].is_string()) {
        if (auto host = to_host(location["path"].get<std::string>())) location["path"] = *host;
      }
    }
  }
  if (update.contains("content")) {
    json& content = update["content"];
    // A message chunk's content is one block; a tool call's is a list of tool call contents.
    if (content.is_object()) content_block_to_host(*this, content);
    if (content.is_array()) {
      for (json& item : content) {
        if (!item.is_object()) continue;
        std::string type = item.value("type", "");
        if (type == "diff" && item.contains("path") && item["path"].is_string()) {
          if (auto host = to_host(item["path"].get<std::string>())) item["path"] = *host;
        } else if (type == "content" && item.contains("content")) {
          content_block_to_host(*this, item["content"]);
        }
      }
    }
  }
  for (const char* raw : {"rawInput", "rawOutput"}) {
    if (update.contains(raw)) raw_to_host(*this, update[raw]);
  }
}

}  // namespace lockroom::acp
