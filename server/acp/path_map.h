// PathMap: host paths ↔ guest paths between an ACP editor and an agent in a sandbox.
//
// The editor knows the project as a host folder (`cwd` of session/new); the agent sees the same
// files at /workspace in the guest. Only paths inside those two roots are mapped: a guest path
// outside /workspace (/tmp/x, /root/.cache) is shown to the editor as the guest path it is, never
// as a host path, and a host path outside the project is left as is on its way in (the guest
// does not have it). What is rewritten, in the messages of the ACP face:
//   editor → agent: `cwd`; in prompts, resource_link and resource URIs (file://) and the host
//                   folder's path where it appears in text;
//   agent → editor: in session/update and session/request_permission tool calls, `locations[].path`,
//                   `diff` content paths, resource_link / resource URIs in content, and string
//                   values of rawInput / rawOutput that are workspace paths.
// Pure functions; tested in tests/unit/acp.
#pragma once

#include <optional>
#include <string>

#include "protocol/jsonrpc.h"

namespace lockroom::acp {

using protocol::json;

class PathMap {
 public:
  // `host_root`: an absolute host folder (normalised: no trailing '/', no "." or ".."
  // components); `guest_root`: where it is in the guest.
  PathMap(std::string host_root, std::string guest_root = "/workspace");

  const std::string& host_root() const { return host_; }
  const std::string& guest_root() const { return guest_; }

  // The other side's path when `path` is the root or under it, else nullopt.
  std::optional<std::string> to_host(const std::string& guest_path) const;
  std::optional<std::string> to_guest(const std::string& host_path) const;
  // The same for file:// URIs (percent-encoded paths compared as such).
  std::string uri_to_host(const std::string& uri) const;
  std::string uri_to_guest(const std::string& uri) const;

  // A prompt (ContentBlock[]) on its way to the agent.
  void prompt_to_guest(json& prompt) const;
  // A session/update's `update`, or a request_permission's `toolCall`, on its way to the editor.
  void update_to_host(json& update) const;

 private:
  std::string host_, guest_;
};

}  // namespace lockroom::acp
