// HttpRelay's screening of request bodies that could carry a secret's sentinel to a host outside
// its scope: the body is held whole, bounded, and scanned before anything of the request is sent
// (see http_relay.h).
#include "server/egress/engine/http_relay.h"

#include "server/egress/engine/proxy_answers.h"
#include "server/egress/engine/session.h"
#include "server/egress/policy/secrets.h"

namespace lockroom::egress {

void HttpRelay::screen_body() {
  if (stopped_ || phase_ != Phase::kScreen || in_.empty()) return;
  std::string astray;
  FeedResult fed = request_.feed_body(in_, [&](std::string_view body) {
    if (astray.empty()) astray = sentinel_outside_scope(body_scanner_->feed(body));
  });
  if (fed.state == ParseState::kError) {
    const std::string& why = request_.error().message;
    return refuse(400, "lockroom: cannot read this request's body: " + why, "deny", record_.rule, why);
  }
  if (fed.state == ParseState::kComplete && astray.empty()) astray = sentinel_outside_scope(body_scanner_->finish());
  if (!astray.empty()) {
    std::string reason = "sentinel of secret " + astray + " sent to host " + head_.host.name +
                         ", which is not one of its hosts (in the request body)";
    return refuse(403, "lockroom: blocked: " + reason, "block", record_.rule, "exfiltration: " + reason);
  }
  screened_.append(in_, 0, fed.consumed);
  in_.erase(0, fed.consumed);
  if (screened_.size() > kMaxScreenedBody)
    return refuse(413, screen_limit_text(host_port_text(head_.host.url_host(), head_.port)), "deny", record_.rule,
                  "request body over the screening bound");
  if (fed.state != ParseState::kComplete) return;
  session_.client().pause_reading(true);  // the next request waits for this response
  body_scanner_.reset();
  screened_done_ = true;
  connect_upstream();
}

std::string HttpRelay::screen_limit_text(const std::string& where) const {
  return "lockroom: request bodies to " + where + " are read whole and checked for secrets' sentinels before they are sent " +
         "(this sandbox has secrets that must not go there); this one is over the " + std::to_string(kMaxScreenedBody >> 20) +
         " MiB that lockroom holds for that";
}

}  // namespace lockroom::egress
