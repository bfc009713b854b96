// LyingWorld: a host GuestChannel on one end of a socketpair and the scripted LyingAgent
// (tests/fakes/lying_agent.h) on the other, on a test loop. The tests of a hostile or scripted
// guest build on it: connect() waits for the hello, agent_client() makes the AgentClient,
// finish() closes both ends and the loop (its result: the loop's leftover handles, 0 when clean).
#pragma once

#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <optional>

#include "tests/fakes/lying_agent.h"
#include "tests/unit/channel/channel_harness.h"

namespace lockroom::testing {

struct LyingWorld {
  Loop loop;
  std::unique_ptr<channel::GuestChannel> channel;
  std::unique_ptr<LyingAgent> agent;
  std::unique_ptr<channel::AgentClient> client;  // never outlives the channel
  std::optional<Error> failure;                  // the channel's failure, once it failed
  bool ready = false;                            // hello answered

  explicit LyingWorld(channel::ChannelOptions options = {}) {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    agent = std::make_unique<LyingAgent>(loop.get(), sv[1]);
    channel = std::make_unique<channel::GuestChannel>(loop.get(), options);
    REQUIRE(channel->start(
        sv[0], [this](Result<protocol::channel::HelloResult> r) { r ? void(ready = true) : void(failure = r.error()); },
        [this](const Error& e) { failure = e; }));
  }

  // Waits for the hello (or a failure before it).
  void wait_ready() { REQUIRE(loop.run_until([&] { return ready || failure.has_value(); })); }

  channel::AgentClient& agent_client() {
    client = std::make_unique<channel::AgentClient>(*channel);
    return *client;
  }

  int finish() {
    using namespace std::chrono_literals;
    client.reset();
    bool closed = false, agent_closed = false;
    channel->close([&] { closed = true; });
    agent->close([&] { agent_closed = true; });
    loop.run_until([&] { return closed && agent_closed; }, 5s);
    channel.reset();
    agent.reset();
    return loop.finish();
  }
};

}  // namespace lockroom::testing
