// The guest rows of the egress benchmark: busybox wget in a real sandbox (the SandboxManager, the
// real lockroom-agent, the guest's own proxy endpoint, the channel and the host proxy engine),
// against the benchmark's server on the host, allowed by a rule naming exactly 127.0.0.1 and
// its port. Peer in the same guest: the same wget loop against busybox httpd on the guest's own
// loopback (no proxy), which prices what a TCG guest itself costs (process start, copying).
//
// Latencies are taken on the host from the arrival of one marker line per request (the guest's
// busybox has no sub-second clock), so each includes starting wget in the guest; the marker's
// trip over the channel is the same for every line and cancels out. Main thread, its own loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace lockroom::bench {

struct GuestRow {
  std::vector<double> latency_ms;  // one per small request
  double download_mbps = 0;        // 1 MB = 10^6 bytes
};

struct GuestResults {
  GuestRow through_proxy;  // host server, through the guest's proxy endpoint and the host proxy
  GuestRow guest_local;    // busybox httpd on the guest's loopback
  std::string accel;       // "kvm" or "tcg"
};

// `server_port`: the host server on 127.0.0.1. `download_bytes` at most 150 MB (it is also
// written to the guest's /tmp for the peer).
Result<GuestResults> run_guest_rows(std::uint16_t server_port, int requests, std::uint64_t download_bytes);

}  // namespace lockroom::bench
