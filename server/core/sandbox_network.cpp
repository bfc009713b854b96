// One sandbox's egress: secrets, proxy, guest endpoints, CA; see sandbox_network.h.
#include "server/core/sandbox_network.h"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "server/core/guest_connection_stream.h"
#include "server/egress/engine/secret_resolution.h"
#include "server/egress/policy/default_allow.h"

namespace lockroom::core {

namespace wire = channel::wire;

std::vector<egress::Rule> SandboxNetwork::default_allow() {
  const char* home = std::getenv("HOME");
  auto files = egress::system_package_source_files("/etc", home ? home : "/root");
  auto list = egress::default_allow_list(files, egress::package_source_environment());
  for (const auto& note : list.notes) spdlog::debug("default allow list: {}", note);
  return list.rules;
}

void SandboxNetwork::start(uv_loop_t* loop, std::string sandbox_id, NetworkRequest request, std::filesystem::path audit_log,
                           channel::AgentClient& agent, std::weak_ptr<bool> agent_alive, NetworkHooks hooks,
                           Done<std::unique_ptr<SandboxNetwork>> done) {
  auto secrets = request.secrets;
  egress::resolve_secret_values_async(
      loop, std::move(secrets),
      [loop, sandbox_id, request = std::move(request), audit_log, &agent, agent_alive, hooks, done](Result<egress::SecretValues> values) mutable {
        auto alive = agent_alive.lock();
        if (!alive || !*alive) return done(make_error(ErrorCode::kWrongState, "the sandbox ended while its network was starting"));
        if (!values) return done(make_error(values.error().code, "cannot read a secret for the sandbox: " + values.error().message));
        std::error_code ec;
        std::filesystem::create_directories(audit_log.parent_path(), ec);
        egress::ProxyOptions options;
        options.sandbox_id = sandbox_id;
        options.policy = std::move(request.policy);
        options.secrets = std::move(request.secrets);
        options.secret_values = std::move(*values);
        options.audit_log = audit_log;
        for (const auto& file : request.upstream_ca_files) options.upstream_tls.extra_ca_files.push_back(file.string());
        options.progress_interval = request.progress_interval;
        // An allowSandbox answer adds a rule to the running policy (as the proxy takes the answer):
        // told right after.
        auto self = std::make_shared<std::weak_ptr<SandboxNetwork*>>();
        if (hooks.approve)
          options.approve = [approve = std::move(hooks.approve), self](const egress::ApprovalQuestion& question, egress::ApprovalReply reply) {
            auto answered = std::make_shared<bool>(false);
            approve(question, [reply, self, answered](egress::ApprovalOutcome outcome) {
              if (*answered) return reply(outcome);  // ignored by the proxy
              *answered = true;
              bool adds_rule = outcome.answer == egress::ApprovalAnswer::kAllowSandbox;
              reply(outcome);
              auto box = self->lock();
              if (adds_rule && box && *box && (*box)->on_policy_changed_)
                (*box)->on_policy_changed_((*box)->policy(), PolicyChangeCause::kApproval);
            });
          };
        options.on_event = std::move(hooks.on_event);
        auto proxy = egress::Proxy::create(loop, std::move(options));
        if (!proxy) return done(make_error(proxy.error().code, "cannot start the sandbox's network proxy: " + proxy.error().message));
        std::unique_ptr<SandboxNetwork> network(new SandboxNetwork(std::move(*proxy), audit_log, std::move(hooks.on_policy_changed)));
        *self = network->self_;
        egress::Proxy* raw = network->proxy_.get();
        agent.on_connection([raw, process_of_pid = hooks.process_of_pid](std::unique_ptr<channel::GuestConnection> connection) {
          auto kind = connection->kind();
          auto target = connection->target();
          egress::ConnectionOrigin origin;
          if (auto client = connection->client_process()) {
            egress::GuestProcess process{client->pid, client->command, {}};
            if (client->started && process_of_pid) process.process_id = process_of_pid(*client->started);
            origin.process = std::move(process);
          }
          auto stream = std::make_unique<GuestConnectionStream>(std::move(connection));
          if (kind == protocol::channel::NetKind::kSocks && target) {
            auto verdict = stream->socks_verdict();
            raw->accept_socks(std::move(stream), target->host, static_cast<std::uint16_t>(target->port), verdict, std::move(origin));
          } else {
            raw->accept_http(std::move(stream), std::move(origin));
          }
        });
        std::string pem = network->proxy_->ca_certificate_pem();
        auto shared = std::make_shared<std::unique_ptr<SandboxNetwork>>(std::move(network));
        agent.trust_certificate(pem, [&agent, shared, done](Result<wire::NetTrustResult> trusted) {
          if (!trusted) return done(make_error(trusted.error().code, "the guest did not take the sandbox CA: " + trusted.error().message));
          agent.enable_network(wire::NetEnableParams{}, [shared, done](Result<wire::NetEnableResult> enabled) {
            if (!enabled) return done(make_error(enabled.error().code, "the guest could not start its proxy endpoints: " + enabled.error().message));
            done(std::move(*shared));
          });
        });
      });
}

SandboxNetwork::~SandboxNetwork() { *self_ = nullptr; }

void SandboxNetwork::set_policy(egress::Policy policy) {
  proxy_->set_policy(std::move(policy));
  if (on_policy_changed_) on_policy_changed_(proxy_->policy(), PolicyChangeCause::kRequest);
}

const egress::Policy& SandboxNetwork::policy() const { return proxy_->policy(); }

void SandboxNetwork::switch_off() { proxy_->switch_off(); }

bool SandboxNetwork::switched_off() const { return proxy_->switched_off(); }

}  // namespace lockroom::core
