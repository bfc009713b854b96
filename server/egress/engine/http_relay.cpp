// HttpRelay; see http_relay.h.
#include "server/egress/engine/http_relay.h"

#include "server/egress/engine/proxy_answers.h"
#include "server/egress/engine/session.h"
#include "server/egress/policy/secrets.h"

namespace lockroom::egress {

namespace {

int status_for_connect_error(const Error& error) {
  if (error.code == ErrorCode::kInvalidInput) return 403;  // the address check refused every address
  if (error.message.find("timed out") != std::string::npos) return 504;
  return 502;
}

std::uint64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count());
}

}  // namespace

HttpRelay::HttpRelay(Session& session, std::optional<InsideTunnel> tunnel)
    : session_(session), core_(session.core()), tunnel_(std::move(tunnel)), request_(new_request_parser()),
      sentinels_(sentinels_of(core_.secrets())), deadline_(session.core().loop()) {}

HttpRelay::~HttpRelay() { stop(); }

RequestHeadParser HttpRelay::new_request_parser() const {
  return tunnel_ ? RequestHeadParser::inside_tunnel(tunnel_->host, tunnel_->port) : RequestHeadParser();
}

void HttpRelay::start(std::string received) {
  in_ = std::move(received);
  head_bytes_ = in_.size();
  await_head();
  session_.client().start({
      [this](std::string_view bytes) {
        if (stopped_) return;
        deadline_.touch();
        if (phase_ == Phase::kHead) {
          head_bytes_ += bytes.size();
          if (between_requests_) await_head();  // the next request began: its head is due
        }
        in_.append(bytes);
        if (phase_ == Phase::kGate && in_.size() > kMaxHeadBytes) session_.client().pause_reading(true);
        process();
      },
      [this] { on_client_end(); },
      [this](const std::string& why) {
        if (stopped_) return;
        if (tunnel_ && requests_ == 0) {  // the guest's TLS failed (it may not trust the sandbox CA)
          started_ = std::chrono::steady_clock::now();
          record_.time = std::chrono::system_clock::now();
          record_.host = tunnel_->host.name;
          record_.port = tunnel_->port;
          record_.scheme = "https";
          record_.sni = tunnel_->sni;
          audit("allow", tunnel_->decision.rule, "TLS with the guest failed: " + why);
        }
        session_.end(why);
      },
      [this] {
        if (!stopped_ && upstream_ && phase_ == Phase::kExchange) upstream_->pause_reading(false);
      },
  });
  process();
}

void HttpRelay::stop() {
  if (stopped_) return;
  stopped_ = true;
  phase_ = Phase::kDone;
  deadline_.disarm();
  core_.dispose(std::move(connecting_));  // it may be running its callback now
  drop_upstream();
}

void HttpRelay::await_head() {
  between_requests_ = false;
  std::chrono::milliseconds limit = core_.options().request_head_timeout;
  deadline_.arm(limit, [this] { head_timed_out(); });
}

void HttpRelay::await_next() {
  between_requests_ = true;
  head_bytes_ = 0;
  deadline_.arm(core_.options().idle_timeout, [this] {
    if (!stopped_) session_.end();  // a kept-alive connection nobody uses: closed as servers do
  });
}

void HttpRelay::head_timed_out() {
  if (stopped_ || phase_ != Phase::kHead) return;
  if (head_bytes_ == 0) return session_.end();  // nothing asked: nothing to answer
  std::string limit = duration_text(core_.options().request_head_timeout);
  refuse(408, "lockroom: the request head did not arrive whole within " + limit + "; send the whole head at once",
         "deny", "", "request head timeout (" + limit + ")");
}

void HttpRelay::exchange_idle() {
  if (stopped_ || phase_ != Phase::kExchange) return;
  std::string limit = duration_text(core_.options().idle_timeout);
  std::string where = host_port_text(head_.host.url_host(), head_.port);
  std::string reason = "no byte either way for " + limit + " (the idle timeout)";
  refuse(504, "lockroom: " + where + " sent no answer for " + limit + " (the idle timeout)", "allow", record_.rule, reason);
}

void HttpRelay::drop_upstream() {
  slot_.release();
  if (!upstream_) return;
  upstream_->close();
  core_.dispose(std::move(upstream_));  // never destroyed inside its own callback
  upstream_key_.clear();
  upstream_reusable_ = false;
}

bool HttpRelay::write_client(std::string_view bytes) {
  record_.bytes_down += bytes.size();
  bool below_mark = session_.client().write(bytes);
  session_.note_buffered(upstream_ ? upstream_->buffered() : 0);
  return below_mark;
}

void HttpRelay::process() {
  if (stopped_) return;
  if (phase_ == Phase::kHead) {
    if (in_.empty()) return;
    FeedResult fed = request_.feed(in_);
    if (fed.state == ParseState::kNeedMore) {
      in_.clear();  // the parser keeps what it needs
      return;
    }
    if (fed.state == ParseState::kError) {
      const std::string& why = request_.error().message;
      return refuse(400, "lockroom: cannot read this request: " + why, "deny", "", "unreadable request: " + why);
    }
    in_.erase(0, fed.consumed);
    return begin_request();
  }
  if (phase_ == Phase::kScreen) return screen_body();
  if (phase_ == Phase::kExchange && !request_done_) pump_request_body();
}

void HttpRelay::begin_request() {
  ++requests_;
  deadline_.disarm();  // deciding and connecting have limits of their own
  head_ = request_.head();
  session_.client().pause_reading(true);
  started_ = std::chrono::steady_clock::now();
  record_ = AuditRecord{};
  record_.time = std::chrono::system_clock::now();
  record_.host = head_.host.name;
  record_.port = head_.port;
  record_.scheme = scheme_name(tunnel_ ? Scheme::kHttps : head_.scheme);
  record_.method = head_.method;
  record_.path = head_.target;
  if (tunnel_) record_.sni = tunnel_->sni;
  session_.stamp(record_);
  record_.request = requests_;

  if (head_.is_connect) {
    if (tunnel_) return refuse(400, "lockroom: CONNECT inside a tunnel is not supported", "deny", "", "CONNECT inside a tunnel");
    phase_ = Phase::kDone;
    drop_upstream();
    session_.start_connect(head_, std::move(in_));
    in_.clear();
    return;
  }
  phase_ = Phase::kGate;
  if (tunnel_) return gated(tunnel_->decision);
  Target target{head_.host, head_.port, head_.scheme};
  ApprovalQuestion question;
  question.method = head_.method;
  question.path = head_.target;
  question.process = session_.origin().process;
  core_.gate(session_.id(), target, std::move(question), [this](GateResult decision) { gated(decision); });
  // Waiting for an answer: keep reading, so a guest that gives up is noticed (its bytes wait).
  if (phase_ == Phase::kGate) session_.client().pause_reading(false);
}

void HttpRelay::gated(const GateResult& decision) {
  if (stopped_) return;
  session_.client().pause_reading(true);
  record_.rule = decision.rule;
  record_.reason = decision.reason;
  record_.approval = decision.approval;
  record_.approval_reason = decision.approval_reason;
  record_.approval_id = decision.approval_id;
  std::string where = host_port_text(head_.host.url_host(), head_.port);
  if (!decision.allowed)
    return refuse(403, denied_text(where, decision.rule, decision.reason), "deny", decision.rule, decision.reason);

  Result<InjectionResult> injected = inject_secrets(head_, core_.secrets(), core_.secret_values());
  if (!injected) return refuse(502, "lockroom: " + injected.error().message, "deny", decision.rule, injected.error().message);
  if (injected->blocked)
    return refuse(403, "lockroom: blocked: " + injected->reason, "block", decision.rule, "exfiltration: " + injected->reason);
  head_ = std::move(injected->head);
  record_.secrets = injected->injected;
  body_scanner_.reset();
  screened_.clear();
  screened_done_ = false;
  if (!sentinels_.empty() && head_.body != BodyFraming::kNone) body_scanner_.emplace(sentinels_);
  bool could_leak = false;
  for (const Secret& secret : core_.secrets()) could_leak = could_leak || !secret.scoped_to(head_.host);
  if (body_scanner_ && could_leak) {
    if (head_.body == BodyFraming::kContentLength && head_.content_length > kMaxScreenedBody)
      return refuse(413, screen_limit_text(where), "deny", decision.rule, "request body over the screening bound");
    phase_ = Phase::kScreen;
    deadline_.arm(core_.options().idle_timeout, [this] {
      if (stopped_ || phase_ != Phase::kScreen) return;
      refuse(408, "lockroom: the request body did not arrive within " + duration_text(core_.options().idle_timeout), "deny",
             record_.rule, "request body timeout");
    });
    session_.client().pause_reading(false);
    return screen_body();
  }
  connect_upstream();
}

void HttpRelay::connect_upstream() {
  std::string where = host_port_text(head_.host.url_host(), head_.port);
  std::string key = std::string(scheme_name(head_.scheme)) + "://" + where;
  if (tunnel_) key = "tunnel";
  if (upstream_ && upstream_key_ == key && upstream_reusable_) return send_head();
  drop_upstream();
  upstream_key_ = key;
  phase_ = Phase::kConnecting;
  if (tunnel_ && tunnel_->connected) {
    slot_ = std::move(tunnel_->slot);
    return use_upstream(std::move(tunnel_->connected));
  }
  slot_ = core_.take_upstream_slot();
  if (!slot_)
    return refuse(503, core_.upstream_limit_text(), "deny", "connection limit",
                  "the sandbox's limit of " + std::to_string(core_.options().max_upstream_connections) +
                      " upstream connections is reached");
  core_.dispose(std::move(connecting_));
  connecting_ = core_.connect(Target{head_.host, head_.port, head_.scheme},
                              [this](Result<std::unique_ptr<tls::UpstreamConnection>> result) { connected(std::move(result)); });
}

void HttpRelay::connected(Result<std::unique_ptr<tls::UpstreamConnection>> result) {
  if (stopped_) return;
  std::string where = host_port_text(head_.host.url_host(), head_.port);
  if (!result) {
    const Error& error = result.error();
    int status = status_for_connect_error(error);
    if (status == 403)
      return refuse(403, "lockroom: " + where + " is not allowed: " + error.message, "deny", "address check", error.message);
    std::string what = status == 504 ? "connecting to " + where + " timed out: " : "cannot connect to " + where + ": ";
    return refuse(status, "lockroom: " + what + error.message, "allow", record_.rule, error.message);
  }
  use_upstream(std::move(result.value()));
}

void HttpRelay::use_upstream(std::unique_ptr<tls::UpstreamConnection> connection) {
  record_.address = ip_address_of(connection->address()).to_string();
  std::unique_ptr<Side> side = std::make_unique<UpstreamSide>(std::move(connection), core_.options().high_water);
  if (tunnel_ || head_.scheme == Scheme::kHttps) {
    auto tls = tls::TlsStream::connect(core_.client_tls(), head_.host.name);
    if (!tls) return refuse(502, "lockroom: cannot start TLS to " + head_.host.name + ": " + tls.error().message, "allow",
                            record_.rule, tls.error().message);
    side = std::make_unique<TlsSide>(std::move(tls.value()), std::move(side));
  }
  upstream_ = std::move(side);
  upstream_reusable_ = true;
  upstream_->start({
      [this](std::string_view bytes) { on_upstream_data(bytes); },
      [this] { on_upstream_end(); },
      [this](const std::string& why) { on_upstream_error(why); },
      [this] {
        if (!stopped_ && phase_ == Phase::kExchange && !request_done_) session_.client().pause_reading(false);
      },
  });
  send_head();
}

void HttpRelay::send_head() {
  phase_ = Phase::kExchange;
  progress_.start(core_.loop());
  deadline_.arm(core_.options().idle_timeout, [this] { exchange_idle(); });
  request_done_ = head_.body == BodyFraming::kNone;
  response_head_done_ = false;
  response_.emplace(head_.method);
  std::string out = serialize_request_for_upstream(head_);
  record_.bytes_up += out.size();
  upstream_->write(out);
  if (screened_done_) {  // the body is here already, checked: it follows the head at once
    record_.bytes_up += screened_.size();
    upstream_->write(screened_);
    session_.note_buffered(upstream_->buffered());
    screened_.clear();
    request_done_ = true;
    return;
  }
  if (!request_done_) {
    session_.client().pause_reading(false);
    pump_request_body();
  }
}

std::string HttpRelay::sentinel_outside_scope(const std::vector<SentinelMatch>& matches) const {
  for (const SentinelMatch& match : matches) {
    const Secret& secret = core_.secrets()[match.sentinel];
    if (!secret.scoped_to(head_.host)) return secret.name;
  }
  return {};
}

void HttpRelay::pump_request_body() {
  if (in_.empty() || stopped_) return;
  std::string astray;
  FeedResult fed = request_.feed_body(in_, [&](std::string_view body) {
    if (body_scanner_ && astray.empty()) astray = sentinel_outside_scope(body_scanner_->feed(body));
  });
  if (fed.state == ParseState::kError) {
    const std::string& why = request_.error().message;
    return refuse(400, "lockroom: cannot read this request's body: " + why, "deny", record_.rule, why);
  }
  if (fed.state == ParseState::kComplete && body_scanner_ && astray.empty())
    astray = sentinel_outside_scope(body_scanner_->finish());
  if (!astray.empty()) {
    std::string reason = "sentinel of secret " + astray + " sent to host " + head_.host.name +
                         ", which is not one of its hosts (in the request body)";
    drop_upstream();
    return refuse(403, "lockroom: blocked: " + reason, "block", record_.rule, "exfiltration: " + reason);
  }
  std::string_view used(in_.data(), fed.consumed);
  record_.bytes_up += used.size();
  bool below_mark = upstream_->write(used);
  session_.note_buffered(upstream_->buffered());
  maybe_progress();
  in_.erase(0, fed.consumed);
  if (fed.state == ParseState::kComplete) {
    request_done_ = true;
    session_.client().pause_reading(true);  // the next request waits for this response
  } else if (!below_mark) {
    session_.client().pause_reading(true);
  }
}

void HttpRelay::on_upstream_data(std::string_view bytes) {
  if (stopped_) return;
  deadline_.touch();
  if (phase_ != Phase::kExchange || !response_) return drop_upstream();  // an idle server talking: not reusable
  std::string head_out;  // a response head to send with this chunk's body bytes
  if (!response_head_done_) {
    FeedResult fed = response_->feed(bytes);
    if (fed.state == ParseState::kNeedMore) return;
    if (fed.state == ParseState::kError)
      return refuse(502, "lockroom: " + head_.host.name + " sent a response that cannot be read: " + response_->error().message,
                    "allow", record_.rule, "unreadable response: " + response_->error().message);
    const ResponseHead& head = response_->head();
    bytes.remove_prefix(fed.consumed);
    if (head.interim()) {
      write_client(serialize_response_for_client(head));
      response_.emplace(head_.method);
      return on_upstream_data(bytes);
    }
    if (head.status == 101) return refuse(502, "lockroom: protocol upgrades are not relayed", "allow", record_.rule, "101 upgrade");
    response_head_done_ = true;
    record_.upstream_status = head.status;
    if (!head.keep_alive) upstream_reusable_ = false;
    if (!head.keep_alive || !head_.keep_alive) close_after_ = true;
    head_out = serialize_response_for_client(head);
    if (head.body == BodyFraming::kNone || bytes.empty()) write_client(head_out);
    if (head.body == BodyFraming::kNone) {
      if (!bytes.empty()) upstream_reusable_ = false;
      return response_complete();
    }
  }
  if (bytes.empty()) return;
  maybe_progress();
  FeedResult fed = response_->feed_body(bytes, [](std::string_view) {});
  if (fed.state == ParseState::kError) {
    std::string why = "the response from " + head_.host.name + " broke off: " + response_->error().message;
    audit("allow", record_.rule, why);
    return session_.end(why);
  }
  // The head and the first body bytes of a response go out in one write (one frame, one syscall).
  bool below_mark = head_out.empty() ? write_client(bytes.substr(0, fed.consumed))
                                     : write_client(head_out.append(bytes.substr(0, fed.consumed)));
  if (fed.state == ParseState::kComplete) {
    if (fed.consumed < bytes.size()) upstream_reusable_ = false;
    return response_complete();
  }
  if (!below_mark && upstream_) upstream_->pause_reading(true);
}

void HttpRelay::on_upstream_end() {
  if (stopped_) return;
  if (phase_ != Phase::kExchange) return drop_upstream();
  if (!response_head_done_)
    return refuse(502, "lockroom: " + head_.host.name + " closed the connection without answering", "allow", record_.rule,
                  "no response");
  FeedResult fed = response_->finish_body([](std::string_view) {});
  upstream_reusable_ = false;
  if (fed.state == ParseState::kComplete) {
    close_after_ = true;
    return response_complete();
  }
  audit("allow", record_.rule, "the response from " + head_.host.name + " was cut short");
  session_.end("the response from " + head_.host.name + " was cut short");
}

void HttpRelay::on_upstream_error(const std::string& why) {
  if (stopped_) return;
  if (phase_ != Phase::kExchange) return drop_upstream();
  if (!response_head_done_)
    return refuse(502, "lockroom: " + host_port_text(head_.host.url_host(), head_.port) + ": " + why, "allow", record_.rule, why);
  audit("allow", record_.rule, why);
  session_.end(why);
}

void HttpRelay::on_client_end() {
  if (stopped_) return;
  client_ended_ = true;
  // Before a request, or while its approval is pending (the guest gave up): nothing to answer.
  if (phase_ == Phase::kHead || phase_ == Phase::kGate) return session_.end();
  if (phase_ == Phase::kExchange && !request_done_) {
    audit("allow", record_.rule, "the guest closed the connection before sending the whole request");
    session_.end("request cut short");
  }
  // Otherwise the response is still relayed and the connection closed after it.
}

void HttpRelay::response_complete() {
  if (!request_done_) close_after_ = true;  // the server answered before the body ended
  audit("allow", record_.rule, record_.reason);
  if (!upstream_reusable_) drop_upstream();
  if (close_after_ || client_ended_) {
    phase_ = Phase::kDone;
    return session_.end();
  }
  phase_ = Phase::kHead;
  request_ = new_request_parser();
  response_.reset();
  record_ = AuditRecord{};  // a refusal of the next request must not carry this one's fields
  await_next();
  if (!in_.empty()) {  // the next request was pipelined: its head is due
    head_bytes_ = in_.size();
    await_head();
  }
  if (upstream_) upstream_->pause_reading(false);
  session_.client().pause_reading(false);
  process();
}

void HttpRelay::cut(const std::string& reason) {
  if (stopped_ || phase_ != Phase::kExchange) return;
  audit("allow", record_.rule, reason);
}

void HttpRelay::maybe_progress() {
  if (phase_ != Phase::kExchange || !progress_.due(core_.loop(), core_.options().progress_interval)) return;
  record_.duration_ms = elapsed_ms(started_);
  core_.emit_phase(record_, "progress");
}

void HttpRelay::audit(const std::string& decision, const std::string& rule, const std::string& reason) {
  session_.stamp(record_);
  if (requests_ > 0) record_.request = requests_;
  record_.decision = decision;
  record_.rule = rule;
  record_.reason = reason;
  record_.duration_ms = elapsed_ms(started_);
  core_.emit(record_);
}

void HttpRelay::refuse(int status, const std::string& text, const std::string& decision, const std::string& rule,
                       const std::string& reason) {
  if (record_.time == std::chrono::system_clock::time_point{}) {
    record_.time = std::chrono::system_clock::now();
    started_ = std::chrono::steady_clock::now();
  }
  bool answered = response_head_done_ && phase_ == Phase::kExchange;
  phase_ = Phase::kDone;
  drop_upstream();
  if (answered) {
    audit(decision, rule, reason);
    return session_.end(reason);
  }
  std::uint64_t up = record_.bytes_up;
  record_.upstream_status.reset();
  write_client(proxy_answer(status, core_.guest_safe(text), AnswerCause{rule, core_.guest_safe(reason)}));
  record_.bytes_up = up;
  audit(decision, rule, reason);
  session_.end();
}

}  // namespace lockroom::egress
