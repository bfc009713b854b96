// SandboxNetwork: one sandbox's way out — the guest's proxy endpoints and the host's policy proxy.
//
// start() resolves the declared secrets' values on the host (worker thread; they never enter
// the guest), makes the egress::Proxy (policy, per-sandbox CA, audit log), tells the agent to
// listen on its loopback proxy ports (every process it starts afterwards gets HTTP_PROXY and
// friends) and to trust the sandbox CA, and from then on hands every guest connection to the
// proxy. Destroying it resets every connection and frees the proxy's handles. Loop thread only;
// must go before the AgentClient it uses.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <uv.h>

#include "server/channel/agent_client.h"
#include "server/core/sandbox_events.h"
#include "server/common/result.h"
#include "server/egress/engine/proxy.h"
#include "server/egress/policy/rules.h"
#include "server/egress/policy/secrets.h"

namespace lockroom::core {

struct NetworkRequest {
  egress::Policy policy;  // the default allow list is added here when the policy uses it
  std::vector<egress::Secret> secrets;
  // PEM files of CAs the host's proxy trusts for upstreams besides the host's store (a corporate
  // CA, a test CA); the manager fills it from ManagerConfig::upstream_ca_files. Never the guest's.
  std::vector<std::filesystem::path> upstream_ca_files;
  // How often a long tunnel or transfer reports progress (network/event phase "progress").
  std::chrono::milliseconds progress_interval{5000};
};

struct NetworkHooks {
  egress::ApprovalHook approve;                             // unset: unmatched hosts are denied
  std::function<void(const egress::AuditRecord&)> on_event;  // each decision, and open/progress events
  // lockroom's process id for a guest pid that a process.start reported ("" when none): names the
  // process behind a connection when the agent reports the ancestor it started. Optional.
  std::function<std::string(std::int64_t guest_pid)> process_of_pid;
  // The running policy changed: an allowSandbox answer added a rule, or set_policy replaced it.
  std::function<void(const egress::Policy&, PolicyChangeCause)> on_policy_changed;
};

class SandboxNetwork {
 public:
  template <typename T>
  using Done = std::function<void(Result<T>)>;

  // `agent_alive` guards `agent` across the secret resolution (it expires with the sandbox).
  static void start(uv_loop_t* loop, std::string sandbox_id, NetworkRequest request, std::filesystem::path audit_log,
                    channel::AgentClient& agent, std::weak_ptr<bool> agent_alive, NetworkHooks hooks,
                    Done<std::unique_ptr<SandboxNetwork>> done);
  ~SandboxNetwork();

  // A new policy (it also switches the network on again after switch_off()); tells
  // on_policy_changed (cause kRequest).
  void set_policy(egress::Policy policy);
  const egress::Policy& policy() const;
  // network/policy {policy: false}: new connections are refused at once, open ones closed.
  void switch_off();
  bool switched_off() const;
  const std::filesystem::path& audit_log() const { return audit_log_; }

  // The default allow list of this host (git hosts + the package sources it is configured with).
  static std::vector<egress::Rule> default_allow();

 private:
  SandboxNetwork(std::unique_ptr<egress::Proxy> proxy, std::filesystem::path audit_log,
                 std::function<void(const egress::Policy&, PolicyChangeCause)> on_policy_changed)
      : proxy_(std::move(proxy)), audit_log_(std::move(audit_log)), on_policy_changed_(std::move(on_policy_changed)) {}
  std::unique_ptr<egress::Proxy> proxy_;
  std::filesystem::path audit_log_;
  std::function<void(const egress::Policy&, PolicyChangeCause)> on_policy_changed_;
  // Points at this network while it lives, for approval answers that come later.
  std::shared_ptr<SandboxNetwork*> self_ = std::make_shared<SandboxNetwork*>(this);
};

}  // namespace lockroom::core
