// ReplayBuffer (server/serve/replay_buffer.h): what a detached sandbox keeps for the editor that
// attaches it next — in order, output bounded per process and per sandbox with what was dropped
// counted, network events bounded, exits and state changes never dropped.
#include <catch2/catch.hpp>

#include <string>

#include "server/serve/replay_buffer.h"

using namespace lockroom;
using serve::ReplayBuffer;
using serve::ReplayEvent;

namespace {

core::OutputChunk text(std::string s) { return core::OutputChunk{std::move(s), false}; }

// The output of `process` that is still kept, concatenated.
std::string kept_output(const std::list<ReplayEvent>& events, const std::string& process) {
  std::string out;
  for (const auto& e : events)
    if (const auto* o = std::get_if<ReplayEvent::Output>(&e.what); o && o->process_id == process) out += o->chunk.data;
  return out;
}

}  // namespace

TEST_CASE("replay: events come back in the order they came", "[replay]") {
  ReplayBuffer buffer;
  buffer.output("p-1", core::OutputStream::kStdout, text("a\n"));
  buffer.state(core::SandboxState::kReady, core::StopReason::kNone, "");
  buffer.output("p-2", core::OutputStream::kStderr, text("b\n"));
  buffer.exited("p-1", core::ProcessExit{0, std::nullopt, core::ProcessEndReason::kNone});
  auto events = buffer.take();
  REQUIRE(events.size() == 4);
  auto it = events.begin();
  CHECK(std::get<ReplayEvent::Output>(it++->what).chunk.data == "a\n");
  CHECK(std::holds_alternative<ReplayEvent::State>(it++->what));
  CHECK(std::get<ReplayEvent::Output>(it++->what).stream == core::OutputStream::kStderr);
  CHECK(std::get<ReplayEvent::Exited>(it->what).exit.exit_code == 0);
  CHECK(buffer.events() == 0);
}

TEST_CASE("replay: each process keeps its newest output within its bound, and the rest is counted", "[replay]") {
  serve::ReplayLimits limits;
  limits.per_process_bytes = 100;
  ReplayBuffer buffer(limits);
  std::string all;
  for (int i = 0; i < 50; ++i) {
    std::string line = "line " + std::to_string(i) + "\n";  // 7 or 8 bytes
    all += line;
    buffer.output("p-1", core::OutputStream::kStdout, text(line));
  }
  buffer.output("p-2", core::OutputStream::kStdout, text("quiet\n"));
  buffer.exited("p-1", core::ProcessExit{3, std::nullopt, core::ProcessEndReason::kNone});
  auto stats = buffer.stats();
  auto events = buffer.take();
  std::string kept = kept_output(events, "p-1");
  CHECK(kept.size() <= 100);
  CHECK(kept.size() > 90);                                    // whole chunks: nearly the bound
  CHECK(all.substr(all.size() - kept.size()) == kept);        // the newest, in order
  CHECK(stats.dropped_by_process.at("p-1") == all.size() - kept.size());
  CHECK(stats.dropped_output_bytes == all.size() - kept.size());
  CHECK_FALSE(stats.dropped_by_process.count("p-2"));
  CHECK(kept_output(events, "p-2") == "quiet\n");
  CHECK(std::holds_alternative<ReplayEvent::Exited>(events.back().what));  // an exit is never dropped
}

TEST_CASE("replay: the sandbox bound drops the oldest output of any process first", "[replay]") {
  serve::ReplayLimits limits;
  limits.per_process_bytes = 1000;
  limits.per_sandbox_bytes = 20;
  ReplayBuffer buffer(limits);
  buffer.output("p-1", core::OutputStream::kStdout, text("0123456789"));  // oldest
  buffer.output("p-2", core::OutputStream::kStdout, text("abcdefghij"));
  buffer.output("p-1", core::OutputStream::kStdout, text("ABCDEFGHIJ"));
  auto stats = buffer.stats();
  CHECK(stats.kept_output_bytes == 20);
  CHECK(stats.dropped_by_process.at("p-1") == 10);
  auto events = buffer.take();
  CHECK(kept_output(events, "p-1") == "ABCDEFGHIJ");
  CHECK(kept_output(events, "p-2") == "abcdefghij");
}

TEST_CASE("replay: a single chunk over the bound is still kept (the newest output always is)", "[replay]") {
  serve::ReplayLimits limits;
  limits.per_process_bytes = 4;
  ReplayBuffer buffer(limits);
  buffer.output("p-1", core::OutputStream::kStdout, text("old"));
  buffer.output("p-1", core::OutputStream::kStdout, text("much too long"));
  auto events = buffer.take();
  CHECK(kept_output(events, "p-1") == "much too long");
}

TEST_CASE("replay: network events keep the newest ones and count the rest", "[replay]") {
  serve::ReplayLimits limits;
  limits.max_network_events = 3;
  ReplayBuffer buffer(limits);
  for (int i = 0; i < 10; ++i) {
    egress::AuditRecord record;
    record.host = "h" + std::to_string(i);
    buffer.network(record);
  }
  buffer.state(core::SandboxState::kGone, core::StopReason::kLifetimeLimit, "time is up");
  CHECK(buffer.stats().dropped_network_events == 7);
  auto events = buffer.take();
  REQUIRE(events.size() == 4);
  CHECK(std::get<ReplayEvent::Network>(events.front().what).record.host == "h7");
  CHECK(std::holds_alternative<ReplayEvent::State>(events.back().what));
}
