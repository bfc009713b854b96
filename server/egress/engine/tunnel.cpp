// Tunnel; see tunnel.h.
#include "server/egress/engine/tunnel.h"

#include "server/egress/engine/http_relay.h"
#include "server/egress/engine/proxy_answers.h"
#include "server/egress/engine/session.h"

namespace lockroom::egress {

namespace {

constexpr std::string_view kConnectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";

std::uint64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count());
}

}  // namespace

Tunnel::Tunnel(Session& session, Host host, std::uint16_t port, SocksVerdict verdict, std::string early)
    : session_(session), core_(session.core()), host_(std::move(host)), port_(port), verdict_(std::move(verdict)),
      first_bytes_(std::move(early)), deadline_(session.core().loop()) {}

Tunnel::~Tunnel() { stop(); }

void Tunnel::stop() {
  if (stopped_) return;
  stopped_ = true;
  deadline_.disarm();
  core_.dispose(std::move(connecting_));  // it may be running its callback now
  if (upstream_) upstream_->close();
  if (connection_) connection_->close();
  slot_.release();
}

void Tunnel::start() {
  started_ = std::chrono::steady_clock::now();
  record_.time = std::chrono::system_clock::now();
  record_.host = host_.name;
  record_.port = port_;
  record_.method = verdict_ ? "" : "CONNECT";
  session_.stamp(record_);
  // TLS or not is known only from the first bytes, after the tunnel is answered: go ahead when
  // either https or tcp could be allowed, and decide for the real one then.
  Scheme scheme = Scheme::kHttps;
  Decision as_https = decide(core_.policy(), Target{host_, port_, Scheme::kHttps});
  if (as_https.verdict != Verdict::kAllow) {
    Decision as_tcp = decide(core_.policy(), Target{host_, port_, Scheme::kTcp});
    if (as_tcp.verdict == Verdict::kAllow || (as_tcp.verdict == Verdict::kAsk && as_https.verdict == Verdict::kDeny))
      scheme = Scheme::kTcp;
  }
  record_.scheme = scheme_name(scheme);
  ApprovalQuestion question;
  question.method = record_.method;
  question.process = session_.origin().process;
  awaiting_gate_ = true;
  core_.gate(session_.id(), Target{host_, port_, scheme}, std::move(question), [this](GateResult decision) {
    awaiting_gate_ = false;
    gated(decision);
  });
  if (!awaiting_gate_ || stopped_) return;
  // Waiting for an approval: watch the guest, so one that gives up ends the session; early bytes
  // wait (bounded) for the tunnel.
  session_.client().start({
      [this](std::string_view bytes) {
        first_bytes_.append(bytes);
        if (first_bytes_.size() > kMaxClientHelloBytes) session_.client().pause_reading(true);
      },
      [this] { session_.end(); },
      [this](const std::string& why) { session_.end(why); },
      {},
  });
}

void Tunnel::gated(const GateResult& decision) {
  if (stopped_) return;
  session_.client().pause_reading(true);
  decision_ = decision;
  asked_user_ = decision.rule == "user";
  record_.rule = decision.rule;
  record_.reason = decision.reason;
  record_.approval = decision.approval;
  record_.approval_reason = decision.approval_reason;
  record_.approval_id = decision.approval_id;
  std::string where = host_port_text(host_.url_host(), port_);
  if (!decision.allowed)
    return refuse_before_answer(403, kSocksNotAllowed, denied_text(where, decision.rule, decision.reason), "deny", decision.rule,
                                decision.reason);
  slot_ = core_.take_upstream_slot();
  if (!slot_)
    return refuse_before_answer(503, kSocksGeneralFailure, core_.upstream_limit_text(), "deny", "connection limit",
                                "the sandbox's limit of " + std::to_string(core_.options().max_upstream_connections) +
                                    " upstream connections is reached");
  Scheme scheme = record_.scheme == "tcp" ? Scheme::kTcp : Scheme::kHttps;
  connecting_ = core_.connect(Target{host_, port_, scheme},
                              [this](Result<std::unique_ptr<tls::UpstreamConnection>> result) { connected(std::move(result)); });
}

void Tunnel::connected(Result<std::unique_ptr<tls::UpstreamConnection>> result) {
  if (stopped_) return;
  std::string where = host_port_text(host_.url_host(), port_);
  if (!result) {
    const Error& error = result.error();
    if (error.code == ErrorCode::kInvalidInput)
      return refuse_before_answer(403, kSocksNotAllowed, "lockroom: " + where + " is not allowed: " + error.message, "deny",
                                  "address check", error.message);
    if (error.message.find("timed out") != std::string::npos)
      return refuse_before_answer(504, kSocksTtlExpired, "lockroom: connecting to " + where + " timed out: " + error.message,
                                  "allow", decision_.rule, error.message);
    int socks = error.code == ErrorCode::kNotFound ? kSocksHostUnreachable : kSocksConnectionRefused;
    return refuse_before_answer(502, socks, "lockroom: cannot connect to " + where + ": " + error.message, "allow",
                                decision_.rule, error.message);
  }
  connection_ = std::move(result.value());
  record_.address = ip_address_of(connection_->address()).to_string();
  if (verdict_) {
    verdict_(true, kSocksSucceeded, {});
    if (stopped_) return;
  } else {
    record_.bytes_down += kConnectEstablished.size();
    session_.client().write(kConnectEstablished);
  }
  if (record_.scheme == "tcp") return relay_as_is();  // a server may speak first: no peeking
  std::string limit = duration_text(core_.options().request_head_timeout);
  deadline_.arm(core_.options().request_head_timeout, [this, limit] {
    if (!stopped_) refuse_after_answer("the guest sent no first message (a TLS ClientHello) into the tunnel within " + limit);
  });
  session_.client().start({
      [this](std::string_view bytes) { on_first_bytes(bytes); },
      [this] {
        if (stopped_) return;
        audit("allow", decision_.rule, "the guest closed the tunnel before its first message was complete");
        session_.end();
      },
      [this](const std::string& why) {
        if (!stopped_) session_.end(why);
      },
      {},
  });
  if (!first_bytes_.empty()) {
    std::string early = std::move(first_bytes_);
    first_bytes_.clear();
    on_first_bytes(early);
  }
}

void Tunnel::refuse_before_answer(int http_status, int socks_reply, const std::string& text, const std::string& decision,
                                  const std::string& rule, const std::string& reason) {
  if (verdict_) {
    verdict_(false, socks_reply, core_.guest_safe(text));
  } else {
    std::string answer = proxy_answer(http_status, core_.guest_safe(text), AnswerCause{rule, core_.guest_safe(reason)});
    record_.bytes_down += answer.size();
    session_.client().write(answer);
  }
  audit(decision, rule, reason);
  session_.end();
}

void Tunnel::on_first_bytes(std::string_view bytes) {
  if (stopped_) return;
  first_bytes_.append(bytes);
  ClientHelloResult hello = hello_reader_.feed(bytes);
  if (hello.status == ClientHelloStatus::kNeedMore) return;
  session_.client().pause_reading(true);
  first_bytes_known(hello);
}

void Tunnel::first_bytes_known(const ClientHelloResult& hello) {
  const Policy& policy = core_.policy();
  if (hello.status == ClientHelloStatus::kMalformed)
    return refuse_after_answer("the TLS ClientHello sent into the tunnel is malformed: " + hello.error);
  if (hello.status == ClientHelloStatus::kNotTls) {
    record_.scheme = "tcp";
    Decision as_tcp = decide(policy, Target{host_, port_, Scheme::kTcp});
    if (!asked_user_ && as_tcp.verdict != Verdict::kAllow) {
      record_.rule = as_tcp.rule;
      return refuse_after_answer("a tunnel to " + host_port_text(host_.url_host(), port_) +
                                 " that is not TLS is not allowed by this sandbox's network policy (rule: " + as_tcp.rule + ")");
    }
    return relay_as_is();
  }
  record_.scheme = "https";
  if (hello.info.sni) record_.sni = *hello.info.sni;
  if (!asked_user_) {
    Decision as_https = decide(policy, Target{host_, port_, Scheme::kHttps});
    if (as_https.verdict != Verdict::kAllow) {
      record_.rule = as_https.rule;
      return refuse_after_answer("TLS to " + host_port_text(host_.url_host(), port_) +
                                 " is not allowed by this sandbox's network policy (rule: " + as_https.rule + ")");
    }
  }
  bool terminate = core_.must_terminate(host_);
  if (hello.info.sni && *hello.info.sni != host_.name) {
    Result<Host> named = parse_host(*hello.info.sni);
    if (!named) return refuse_after_answer("the TLS server name cannot be read: " + named.error().message);
    Decision as_sni = decide(policy, Target{*named, port_, Scheme::kHttps});
    if (as_sni.verdict != Verdict::kAllow) {
      record_.rule = as_sni.rule;
      return refuse_after_answer("the TLS server name " + named->name + " (tunnel to " + host_.name +
                                 ") is not allowed by this sandbox's network policy (rule: " + as_sni.rule + ")");
    }
    terminate = terminate || core_.must_terminate(*named);
  }
  if (terminate) return terminate_tls();
  relay_as_is();
}

void Tunnel::refuse_after_answer(const std::string& reason) {
  audit("deny", record_.rule, reason);
  session_.end(reason);
}

void Tunnel::cut(const std::string& reason) {
  if (stopped_ || !relaying_) return;
  audit("allow", decision_.rule, reason);
}

void Tunnel::maybe_progress() {
  if (!progress_.due(core_.loop(), core_.options().progress_interval)) return;
  record_.duration_ms = elapsed_ms(started_);
  core_.emit_phase(record_, "progress");
}

void Tunnel::relay_as_is() {
  relaying_ = true;
  record_.decision = "allow";
  record_.rule = decision_.rule;
  record_.reason = decision_.reason;
  record_.duration_ms = elapsed_ms(started_);
  core_.emit_phase(record_, "open");
  progress_.start(core_.loop());
  std::string limit = duration_text(core_.options().idle_timeout);
  deadline_.arm(core_.options().idle_timeout, [this, limit] {
    if (stopped_) return;
    std::string reason = "closed after " + limit + " without a byte either way (the idle timeout)";
    audit("allow", decision_.rule, reason);
    session_.end(reason);
  });
  upstream_ = std::make_unique<UpstreamSide>(std::move(connection_), core_.options().high_water);
  upstream_->start({
      [this](std::string_view bytes) {
        deadline_.touch();
        record_.bytes_down += bytes.size();
        if (!session_.client().write(bytes)) upstream_->pause_reading(true);
        session_.note_buffered(upstream_->buffered());
        maybe_progress();
      },
      [this] {
        upstream_done_ = true;
        session_.client().close_write();
        maybe_finish_relay();
      },
      [this](const std::string& why) {
        if (stopped_) return;
        audit("allow", decision_.rule, why);
        session_.end(why);
      },
      [this] { session_.client().pause_reading(false); },
  });
  session_.client().start({
      [this](std::string_view bytes) {
        deadline_.touch();
        record_.bytes_up += bytes.size();
        if (!upstream_->write(bytes)) session_.client().pause_reading(true);
        session_.note_buffered(upstream_->buffered());
        maybe_progress();
      },
      [this] {
        client_done_ = true;
        upstream_->close_write();
        maybe_finish_relay();
      },
      [this](const std::string& why) {
        if (stopped_) return;
        audit("allow", decision_.rule, why);
        session_.end(why);
      },
      [this] { upstream_->pause_reading(false); },
  });
  if (!first_bytes_.empty()) {
    record_.bytes_up += first_bytes_.size();
    upstream_->write(first_bytes_);
    first_bytes_.clear();
  }
}

void Tunnel::maybe_finish_relay() {
  if (stopped_ || !client_done_ || !upstream_done_) return;
  audit("allow", decision_.rule, decision_.reason);
  session_.end();
}

void Tunnel::terminate_tls() {
  auto tls = tls::TlsStream::accept(core_.server_tls(), host_.name);
  if (!tls) return refuse_after_answer("cannot terminate TLS for " + host_.name + ": " + tls.error().message);
  TlsSide& side = session_.wrap_client_in_tls(std::move(tls.value()));
  deadline_.disarm();  // the relay keeps its own time limits
  HttpRelay::InsideTunnel inside{host_, port_, record_.sni, decision_, std::move(connection_), std::move(slot_)};
  HttpRelay& relay = session_.add_relay(std::make_unique<HttpRelay>(session_, std::move(inside)));
  relay.start({});
  std::string hello = std::move(first_bytes_);
  first_bytes_.clear();
  side.feed_initial(hello);
}

void Tunnel::audit(const std::string& decision, const std::string& rule, const std::string& reason) {
  relaying_ = false;  // the close record is out: one per tunnel
  session_.stamp(record_);
  record_.decision = decision;
  record_.rule = rule;
  record_.reason = reason;
  record_.duration_ms = elapsed_ms(started_);
  core_.emit(record_);
}

}  // namespace lockroom::egress
