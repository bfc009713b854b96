// editor_receives(): runs a piece of server code against a real rpc::Connection over pipes and
// returns every message the editor got (the pipes closed, the loop run to the end). For unit
// tests of what the server sends: progress, notifications.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <functional>
#include <vector>

#include "protocol/jsonrpc.h"
#include "server/rpc/connection.h"
#include "server/rpc/framing.h"
#include "tests/unit/uv_test_util.h"

namespace lockroom::testing {

// Runs `body` against a started Connection, closes it, and returns every message the editor got.
inline std::vector<protocol::json> editor_receives(const std::function<void(rpc::Connection&)>& body) {
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();
  std::vector<protocol::json> received;
  {
    PipeReader editor_side(loop.get(), out.read_end);
    rpc::ConnectionOptions options;
    options.in_fd = in.read_end;
    options.out_fd = out.write_end;
    rpc::Connection connection(loop.get(), options);
    REQUIRE(connection.start([] {}).ok());
    body(connection);
    int closed = 0;
    connection.close([&] { ++closed; });
    loop.run();
    CHECK_FALSE(loop.timed_out());
    CHECK(closed == 1);
    CHECK(editor_side.eof);
    rpc::ContentLengthFraming framing;
    std::vector<rpc::FrameEvent> events;
    framing.feed(editor_side.data, events);
    for (const auto& e : events) {
      REQUIRE(e.kind == rpc::FrameEvent::Kind::kMessage);
      received.push_back(protocol::json::parse(e.text));
    }
    CHECK_FALSE(framing.mid_message());
  }
  ::close(in.write_end);
  CHECK(loop.finish() == 0);
  return received;
}

}  // namespace lockroom::testing
