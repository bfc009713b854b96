// egress::Proxy: the host side of one sandbox's network access.
//
// One Proxy per sandbox, on the server's libuv loop. Guest connections arrive through
// ClientStream adapters (client_stream.h):
//   accept_http(stream)   the guest's client talks to a forward HTTP proxy: absolute-form
//                         requests (each decided, relayed and audited on its own; keep-alive) and
//                         CONNECT host:port (a tunnel)
//   accept_socks(stream, host, port, verdict)
//                         the guest already did the SOCKS handshake; the proxy decides, connects,
//                         calls verdict(ok, SOCKS reply code, reason) and then relays
// Every target is decided by the policy (rules.h: deny wins; `ask` goes to the approval hook,
// and without a hook it is denied), then resolved on the host, and every resolved address is
// checked (check_address) before it is connected to, so a name that resolves to a private or
// metadata address is refused. Tunnels to hosts that have a secret or that the policy marks for
// inspection are terminated with the sandbox's own CA (made here, per Proxy; its key never
// leaves this process) so secrets can be put into requests and sentinels caught; other TLS is
// relayed end to end after the SNI was checked against the policy too.
//
// Limits a demanding user expects of a proxy (ProxyOptions): connecting upstream gives up after
// connect_timeout per address; a request head must arrive whole within request_head_timeout; a
// tunnel, an open request or a keep-alive connection between requests that moves no byte either
// way for idle_timeout is closed; at most max_upstream_connections upstream connections (and
// attempts) are open at once for the sandbox, and one more is refused (503, or a SOCKS general
// failure) with a message naming the limit. Each of these is audited with the reason.
//
// Each decision is one AuditRecord, appended to the audit log (when a path is given) and passed
// to on_event (phase "close"). on_event also gets, not logged: phase "open" when a tunnel starts
// relaying as is (CONNECT, SOCKS, TLS not inspected), and phase "progress" while a tunnel or an
// HTTP exchange moves bytes (at most once per progress_interval). Every record names its guest
// connection (connection_id, the session); concurrent asks for the same host and port share one
// approval (one approve hook call; every record it decided carries its approval_id). Everything runs on the loop thread, including the hooks; nothing blocks: the
// secret values are resolved by the caller beforehand (resolve_secret_values_async in
// secret_resolution.h). close(done) ends every session and frees every handle; done runs once,
// after their close callbacks.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <uv.h>

#include "server/common/result.h"
#include "server/egress/engine/client_stream.h"
#include "server/egress/policy/audit.h"
#include "server/egress/policy/grant.h"
#include "server/egress/policy/rules.h"
#include "server/egress/policy/secrets.h"
#include "server/egress/tls/tls_contexts.h"

namespace lockroom::egress {

struct ApprovalQuestion {
  std::string sandbox;
  std::string host;
  std::uint16_t port = 0;
  std::string scheme;  // "http", "https" or "tcp"
  std::string method;  // for plain HTTP requests
  std::string path;
  std::string reason;  // why the policy could not decide
  // "<sandbox>-a<n>": names this question; the events of every connection it decides carry it.
  std::string approval_id;
  // "host:port": while a question with this key is pending, another connection to the same host
  // and port waits for its answer instead of asking again (one prompt).
  std::string key;
  std::optional<GuestProcess> process;  // the guest program that asked first, when known
  Target target;                        // what was asked, for the grant scopes an editor may offer
};

// What came of asking about a host no rule covers. The first three are the user's answers; the
// other two are not, and are audited as such (both deny):
//   kNotAsked  nobody was asked (the client did not declare approvals, or the sandbox is going)
//   kNoAnswer  the editor was asked but gave no usable answer (timeout, error, unknown decision)
enum class ApprovalAnswer { kAllowOnce, kAllowSandbox, kDeny, kNotAsked, kNoAnswer };
// Why there was no answer from the user (kNone for the user's own answers).
// kNoEditor: the sandbox had no editor connection attached (a shared server's detached sandbox).
// kInvalidScope: the user allowed for the sandbox with a scope wider than allowed (grant.h).
enum class NoAnswerReason { kNone, kNotDeclared, kSandboxGone, kTimeout, kEditorError, kUnknownDecision, kNoEditor, kInvalidScope };

struct ApprovalOutcome {
  ApprovalAnswer answer = ApprovalAnswer::kDeny;
  NoAnswerReason why = NoAnswerReason::kNone;
  std::string detail;  // what the editor said: its error message, or the decision it sent (clipped)
  // kAllowSandbox: how wide the grant is (grant.h); unset: the asked host and port.
  std::optional<GrantScope> scope;

  ApprovalOutcome(ApprovalAnswer answer = ApprovalAnswer::kDeny) : answer(answer) {}  // implicit: a user's answer
  static ApprovalOutcome not_asked(NoAnswerReason why);
  static ApprovalOutcome no_answer(NoAnswerReason why, std::string detail = {});
  bool allows() const { return answer == ApprovalAnswer::kAllowOnce || answer == ApprovalAnswer::kAllowSandbox; }
};

// "allow once", "allow for this sandbox", "deny", "not asked", "no answer"
const char* approval_answer_name(ApprovalAnswer answer);
// On the wire (audit `approval`, network/event): "allowOnce", "allowSandbox", "deny", "notAsked", "noAnswer"
const char* approval_answer_wire(ApprovalAnswer answer);
// On the wire (audit `approvalReason`): "notDeclared", "sandboxGone", "timeout", "editorError",
// "unknownDecision", "invalidScope"; "" for kNone
const char* no_answer_reason_wire(NoAnswerReason why);
// The audit reason's sentence: "the user answered deny", "not asked: the editor did not declare
// network approvals at initialize", "no answer: the editor did not answer in time", ...
std::string approval_outcome_text(const ApprovalOutcome& outcome);

// Call the reply once, on the loop thread; later calls are ignored, and a reply after the
// connection went away (or the Proxy closed) is harmless. kAllowSandbox adds an allow rule
// named "user" (origin kUser) for that host and port, or for its `scope`, to the front of the
// policy; a scope wider than grant_rule() allows denies instead (kNoAnswer, kInvalidScope).
using ApprovalReply = std::function<void(ApprovalOutcome)>;
using ApprovalHook = std::function<void(const ApprovalQuestion&, ApprovalReply)>;
using SocksVerdict = std::function<void(bool ok, int socks_reply, std::string reason)>;

// What the guest's agent said about a connection besides its bytes (informative only).
struct ConnectionOrigin {
  std::optional<GuestProcess> process;
};

struct ProxyOptions {
  std::string sandbox_id;  // 1-40 of [A-Za-z0-9._-]: it names the CA
  Policy policy;           // used as given (apply with_default_allow beforehand if wanted)
  std::vector<Secret> secrets;
  SecretValues secret_values;                 // resolved values of `secrets`, by name (all required)
  std::optional<std::filesystem::path> audit_log;  // per-sandbox JSON-lines file
  ApprovalHook approve;                             // unset: `ask` means deny
  std::function<void(const AuditRecord&)> on_event;
  // How upstream certificates are verified. When `upstream_tls_context` is set it is used (share
  // one per process: loading the host's trust store takes a while).
  tls::TlsClientOptions upstream_tls;
  std::shared_ptr<tls::TlsClientContext> upstream_tls_context;
  std::chrono::milliseconds connect_timeout{30000};        // per address tried
  std::chrono::milliseconds request_head_timeout{30000};   // from the connection (or a request's first byte) to its whole head
  std::chrono::milliseconds idle_timeout{600000};          // no byte either way: the tunnel or connection is closed
  std::size_t max_upstream_connections = 256;              // open or connecting at once, for this sandbox
  std::size_t high_water = 256u << 10;  // per side: pause the other side's reading above this
  // A relayed tunnel or an HTTP exchange that is moving bytes reports its progress (on_event with
  // phase "progress") at most once per interval; 0: never.
  std::chrono::milliseconds progress_interval{5000};
};

struct ProxyStats {
  std::size_t sessions = 0;              // open now
  std::size_t upstream_connections = 0;  // open or connecting now (bounded by max_upstream_connections)
  std::size_t peak_buffered_bytes = 0;   // most bytes any one session held toward both sides at once
  std::uint64_t decisions = 0;           // audit records written
};

class ProxyCore;

class Proxy {
 public:
  static Result<std::unique_ptr<Proxy>> create(uv_loop_t* loop, ProxyOptions options);
  ~Proxy();  // close() should have run; if not, sessions end and handles close without a callback
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  void accept_http(std::unique_ptr<ClientStream> stream, ConnectionOrigin origin = {});
  void accept_socks(std::unique_ptr<ClientStream> stream, std::string host, std::uint16_t port, SocksVerdict verdict,
                    ConnectionOrigin origin = {});

  // For `network/policy`: new decisions use the new policy; open tunnels keep going. Setting a
  // policy also switches the network back on.
  void set_policy(Policy policy);
  const Policy& policy() const;
  // `network/policy {policy: false}`: every new connection is refused at once (403, SOCKS 2,
  // rule "network off"), and every open one is closed now (a relayed tunnel or an exchange under
  // way is audited with the reason). set_policy() switches it on again.
  void switch_off();
  bool switched_off() const;

  std::string ca_certificate_pem() const;
  ProxyStats stats() const;

  // Ends every session (connections are reset), frees every handle, then calls `done` on the loop.
  void close(std::function<void()> done);

 private:
  explicit Proxy(std::shared_ptr<ProxyCore> core) : core_(std::move(core)) {}
  std::shared_ptr<ProxyCore> core_;
};

}  // namespace lockroom::egress
