// fuzz-rpc: libFuzzer over the editor face's input path, framing + dispatch.
//
// Input layout (every byte string is a valid input; short ones use defaults):
//   byte 0      flags: bit 0 selects ndjson instead of Content-Length framing
//   bytes 1..8  a table that drives the chunking and the clock: chunk i is (t & 0x7f) + 1 bytes,
//               times 64 when t's top bit is set (t = table[i % 8]); after each chunk the manual
//               clock moves table[(i + 3) % 8] % 32 ms
//   the rest    the bytes the editor "sent"
// Every frame goes into a Dispatcher gated by LspLifecycle, with handlers that echo, drop their
// reply, reply twice, throw, reply later unless cancelled, call the client, fail the calls and
// abandon the requests in flight. After each step
// the target checks:
//   - every message sent is valid JSON-RPC 2.0 text (strict UTF-8) and survives framing;
//   - every request is answered at most once while it is in flight: replies with an id never
//     outnumber the requests (and invalid messages) that carried it; synchronous handlers answer
//     before handle_message returns; null-id replies match invalid messages and framing errors;
//   - no handler but `initialize` runs before initialize, and none after shutdown;
//   - decoded frames respect the size limit;
//   - at the end, with the clock run far ahead, every request has been answered exactly once,
//     no call is pending, and the dispatcher's counters match what the handlers did;
//   - classify() reads each frame exactly as json::parse() does (same error text, or params of
//     the same value and types), whichever of its readers took it;
//   - no exception escapes.
// With LOCKROOM_FUZZ_CHUNK_DIFF=1 in the environment it also checks that decoding the whole
// input in one read gives the same events as the chunked decoding (framing.h promises arbitrary
// chunking). LOCKROOM_FUZZ_TRACE=1 prints the conversation of each input to stderr.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "protocol/jsonrpc.h"
#include "protocol/lifecycle.h"
#include "protocol/params.h"
#include "server/rpc/dispatcher.h"
#include "server/rpc/framing.h"
#include "server/rpc/lsp_lifecycle.h"
#include "tests/fakes/manual_scheduler.h"
#include "tests/support/json_identical.h"

namespace {

using lockroom::protocol::json;
using lockroom::rpc::CallOutcome;
using lockroom::rpc::Dispatcher;
using lockroom::rpc::FrameEvent;
using lockroom::rpc::Framing;
using lockroom::rpc::GateDecision;
using lockroom::rpc::LspLifecycle;
using lockroom::rpc::Reply;
using lockroom::testing::ManualScheduler;
using lockroom::testing::identical;
namespace protocol = lockroom::protocol;
using ms = std::chrono::milliseconds;

constexpr std::size_t kMaxMessageBytes = 512;
constexpr std::size_t kMaxPendingCalls = 3;
constexpr std::int64_t kCallTimeoutMs = 40;

bool g_chunk_diff = false;
bool g_trace = false;  // LOCKROOM_FUZZ_TRACE=1: print the conversation to stderr (to study one input)

[[noreturn]] void violated(const std::string& what, std::string_view detail = {}) {
  std::fprintf(stderr, "\n*** invariant violated: %s\n", what.c_str());
  if (!detail.empty()) std::fprintf(stderr, "    detail: %.*s\n", static_cast<int>(std::min<std::size_t>(detail.size(), 2000)), detail.data());
  std::abort();
}

void check(bool ok, const std::string& what, std::string_view detail = {}) {
  if (!ok) violated(what, detail);
}

// classify() reads most messages with its own fast reader and the rest with json::parse(); either
// way the outcome must be json::parse()'s: its error text, or its params, types included.
void check_reads_like_json_parse(std::string_view text, const protocol::Message& message) {
  json reference;
  try {
    reference = json::parse(text);
  } catch (const json::exception& e) {
    const auto* invalid = std::get_if<protocol::InvalidMessage>(&message);
    check(invalid && invalid->error.code == protocol::rpc_error::kParseError &&
              invalid->error.message == std::string("parse error: ") + e.what(),
          "classify() did not fail as json::parse() does", text);
    return;
  }
  const json* params = nullptr;
  if (const auto* request = std::get_if<protocol::Request>(&message)) params = &request->params;
  if (const auto* note = std::get_if<protocol::Notification>(&message)) params = &note->params;
  if (!params || !reference.is_object()) return;
  auto it = reference.find("params");
  check(identical(*params, it == reference.end() ? json(nullptr) : *it), "classify() read params unlike json::parse()", text);
}

std::unique_ptr<Framing> make(bool ndjson, std::size_t max) {
  return lockroom::rpc::make_framing(ndjson ? lockroom::rpc::FramingKind::kNdjson : lockroom::rpc::FramingKind::kContentLength, max);
}

// One run of the target: the server side of one conversation, and what the editor saw.
class Session {
 public:
  explicit Session(bool ndjson)
      : out_encoder_(make(ndjson, lockroom::rpc::kDefaultMaxMessageBytes)),
        out_decoder_(make(ndjson, lockroom::rpc::kDefaultMaxMessageBytes)),
        dispatcher_(std::make_unique<Dispatcher>([this](std::string m) { sent_.push_back(std::move(m)); }, clock_,
                                                 kMaxPendingCalls)) {
    Dispatcher& d = *dispatcher_;
    d.set_gate([this](std::string_view method, bool is_request) { return lifecycle_.gate(method, is_request); });

    d.on_request("initialize", [this](const json& params, Reply reply) {
      check(lifecycle_.state() == LspLifecycle::State::kUninitialized, "initialize ran outside the uninitialized state");
      protocol::ParamReader reader(params);
      protocol::read_initialize_params(reader);
      if (!reader.ok()) return reply.error(reader.error());
      lifecycle_.initialized();
      reply.result(protocol::initialize_result(protocol::ServerInfo{"lockroom", "fuzz"}, dispatcher_->request_methods()));
    });
    d.on_request("shutdown", [this](const json&, Reply reply) {
      ran_handler();
      lifecycle_.shut_down();
      reply.result(nullptr);
    });
    d.on_notification("initialized", [this](const json&) { ran_handler(); });
    d.on_notification("exit", [this](const json&) { exit_codes_.push_back(lifecycle_.exit_code()); });
    d.on_request("lockroom/echo", [this](const json& params, Reply reply) {
      ran_handler();
      reply.result(params);
    });
    d.on_request("test/dropReply", [this](const json&, Reply) {
      ran_handler();
      ++drops_;
    });
    d.on_request("test/doubleReply", [this](const json&, Reply reply) {
      ran_handler();
      ++doubles_;
      reply.result("first");
      reply.result("second");
    });
    d.on_request("test/throw", [this](const json&, Reply) {
      ran_handler();
      throw std::runtime_error("deliberate failure");
    });
    // Replies after params.ms (0..1000, default 5) unless cancelled first.
    d.on_request("test/wait", [this](const json& params, Reply reply) {
      ran_handler();
      std::int64_t delay = 5;
      if (params.is_object() && params.contains("ms") && params["ms"].is_number_integer()) {
        delay = params["ms"].get<std::int64_t>();
        if (delay < 0 || delay > 1000) delay = 5;
      }
      auto timer = clock_.start_timer(ms(delay), [reply, delay] { reply.result(json{{"waited", delay}}); });
      reply.on_cancel([this, timer] { clock_.cancel_timer(timer); });
    });
    // Asks the client and answers with what came back.
    d.on_request("test/callClient", [this](const json& params, Reply reply) {
      ran_handler();
      dispatcher_->call("client/ask", params, ms(kCallTimeoutMs), [reply](CallOutcome outcome) {
        if (outcome.error) reply.result(json{{"error", outcome.error->code}});
        else reply.result(json{{"result", outcome.result}});
      });
    });
    d.on_notification("test/failCalls", [this](const json&) {
      ran_handler();
      dispatcher_->fail_pending_calls("the fuzzer says so");
    });
    d.on_notification("test/abandon", [this](const json&) {
      ran_handler();
      dispatcher_->abandon_requests("the fuzzer says so");
    });
    d.on_notification("test/notify", [this](const json& params) {
      ran_handler();
      dispatcher_->notify("test/notified", params);
    });
  }

  // One decoded frame (or framing error) from the editor.
  void deliver(const FrameEvent& event) {
    if (g_trace) std::fprintf(stderr, "%s %s\n", event.kind == FrameEvent::Kind::kError ? "!!" : "->", event.text.c_str());
    if (event.kind == FrameEvent::Kind::kError) {
      ++expected_null_replies_;
      dispatcher_->handle_framing_error(event.text);
      absorb();
      return;
    }
    check(event.text.size() <= kMaxMessageBytes, "a decoded message is larger than the limit", event.text);

    protocol::Message message = protocol::classify(event.text);
    check_reads_like_json_parse(event.text, message);
    std::string key;
    std::size_t sync_replies_expected = 0;  // replies this message must get before handle_message returns
    bool check_sync = false;
    bool malformed_reply = false;
    if (auto* request = std::get_if<protocol::Request>(&message)) {
      key = protocol::id_to_string(request->id);
      bool duplicate = outstanding(key) > 0;
      bool passes = lifecycle_.gate(request->method, true).allow;
      bool async = request->method == "test/wait" || request->method == "test/callClient";
      ++requests_[key];
      check_sync = true;
      sync_replies_expected = (passes && !duplicate && async) ? 0 : 1;
      if (!passes || duplicate) expect_no_handler_ = true;
    } else if (auto* invalid = std::get_if<protocol::InvalidMessage>(&message)) {
      if (invalid->is_response) {
        // A malformed reply to one of our calls is never answered (the editor would take the
        // answer for a reply to its own request); it may end the call it names.
        malformed_reply = true;
      } else if (invalid->id) {
        key = protocol::id_to_string(*invalid->id);
        ++requests_[key];
        check_sync = true;
        sync_replies_expected = 1;
      } else {
        ++expected_null_replies_;
      }
    } else if (auto* note = std::get_if<protocol::Notification>(&message)) {
      if (!lifecycle_.gate(note->method, false).allow) expect_no_handler_ = true;
    }
    std::size_t replies_before = key.empty() ? 0 : replies_[key];
    std::size_t null_replies_before = null_replies_;

    dispatcher_->handle_message(event.text);
    expect_no_handler_ = false;
    absorb();

    if (malformed_reply) check(null_replies_ == null_replies_before, "a malformed reply was answered", event.text);
    if (check_sync) {
      std::size_t got = replies_[key] - replies_before;
      // No other reply can come out of one handle_message: a message cannot cancel or finish
      // another request, so the count is exact.
      if (got != sync_replies_expected)
        violated("request " + key + " got " + std::to_string(got) + " synchronous replies, expected " +
                     std::to_string(sync_replies_expected),
                 event.text);
    }
  }

  void advance(std::int64_t delta_ms) {
    clock_.advance(ms(delta_ms));
    absorb();
  }

  // Runs every timer (waits, call timeouts, overflow answers) and checks the conversation ended
  // with every request answered exactly once.
  void finish() {
    advance(100000);
    check(clock_.pending() == 0, "timers left after running the clock far ahead");
    check(dispatcher_->pending_calls() == 0, "calls to the client still pending at the end");
    check(dispatcher_->requests_in_flight() == 0, "requests still in flight at the end");
    for (const auto& [key, count] : requests_) {
      if (replies_[key] != count)
        violated("request id " + key + " was received " + std::to_string(count) + " times but answered " +
                 std::to_string(replies_[key]) + " times");
    }
    check(null_replies_ == expected_null_replies_, "null-id replies (" + std::to_string(null_replies_) +
                                                       ") do not match invalid messages and framing errors (" +
                                                       std::to_string(expected_null_replies_) + ")");
    const auto& stats = dispatcher_->stats();
    check(stats.double_replies == doubles_, "double_replies (" + std::to_string(stats.double_replies) +
                                                ") differs from the double-replying handler's runs (" + std::to_string(doubles_) + ")");
    check(stats.dropped_replies == drops_, "dropped_replies (" + std::to_string(stats.dropped_replies) +
                                               ") differs from the dropping handler's runs (" + std::to_string(drops_) + ")");
    dispatcher_.reset();
    check(sent_.empty(), "the dispatcher sent something while being destroyed");
  }

 private:
  std::size_t outstanding(const std::string& key) {
    return requests_[key] - replies_[key];
  }

  void ran_handler() {
    if (expect_no_handler_) violated("a handler ran for a message the gate refused or a duplicate id");
    if (lifecycle_.state() != LspLifecycle::State::kRunning) violated("a handler ran while the server was not running");
  }

  // Checks everything sent since the last call.
  void absorb() {
    std::vector<std::string> batch;
    batch.swap(sent_);
    for (const std::string& text : batch) {
      if (g_trace) std::fprintf(stderr, "<- %s\n", text.c_str());
      json msg;
      try {
        msg = json::parse(text);  // strict: invalid UTF-8 throws
      } catch (const std::exception& e) {
        violated(std::string("a message sent is not valid JSON: ") + e.what(), text);
      }
      check(msg.is_object() && msg.value("jsonrpc", "") == "2.0", "a message sent lacks \"jsonrpc\":\"2.0\"", text);
      check(text.find('\n') == std::string::npos, "a message sent holds a raw newline", text);
      // It survives the wire: encoded and decoded again, it is the same text.
      std::vector<FrameEvent> events;
      out_decoder_->feed(out_encoder_->encode(text), events);
      check(events.size() == 1 && events[0].kind == FrameEvent::Kind::kMessage && events[0].text == text,
            "a message sent does not survive its framing", text);

      if (msg.contains("method")) {
        check(msg["method"].is_string(), "a request or notification sent has a non-string method", text);
        continue;  // our own call or notification
      }
      check(msg.contains("result") != msg.contains("error"), "a reply must carry exactly one of result and error", text);
      check(msg.contains("id"), "a reply without an id member", text);
      if (msg.contains("error")) {
        const json& e = msg["error"];
        check(e.is_object() && e.contains("code") && e["code"].is_number_integer() && e.contains("message") &&
                  e["message"].is_string(),
              "an error reply without an integer code and a message", text);
      }
      const json& id = msg["id"];
      if (id.is_null()) {
        ++null_replies_;
        check(null_replies_ <= expected_null_replies_, "more null-id replies than invalid messages", text);
        continue;
      }
      std::string key = protocol::dump(id);
      std::size_t n = ++replies_[key];
      if (n > requests_[key])
        violated("request id " + key + " answered " + std::to_string(n) + " times but received " +
                     std::to_string(requests_[key]) + " times",
                 text);
    }
  }

  ManualScheduler clock_;
  LspLifecycle lifecycle_;
  std::vector<std::string> sent_;
  std::unique_ptr<Framing> out_encoder_;
  std::unique_ptr<Framing> out_decoder_;
  std::unique_ptr<Dispatcher> dispatcher_;

  std::map<std::string, std::size_t> requests_;  // by id_to_string: requests and invalid messages with that id
  std::map<std::string, std::size_t> replies_;
  std::size_t expected_null_replies_ = 0;
  std::size_t null_replies_ = 0;
  std::uint64_t doubles_ = 0;
  std::uint64_t drops_ = 0;
  bool expect_no_handler_ = false;
  std::vector<int> exit_codes_;
};

std::vector<std::string> render(const std::vector<FrameEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back((e.kind == FrameEvent::Kind::kMessage ? "M:" : "E:") + e.text);
  return out;
}

void run(const std::uint8_t* data, std::size_t size) {
  static const std::uint8_t kDefaultTable[8] = {1, 7, 0x83, 31, 2, 64, 5, 0x80};
  bool ndjson = size > 0 && (data[0] & 1);
  std::uint8_t table[8];
  for (int i = 0; i < 8; ++i) table[i] = (std::size_t(1 + i) < size) ? data[1 + i] : kDefaultTable[i];
  std::string_view payload;
  if (size > 9) payload = std::string_view(reinterpret_cast<const char*>(data) + 9, size - 9);

  Session session(ndjson);
  std::unique_ptr<Framing> framing = make(ndjson, kMaxMessageBytes);
  std::vector<FrameEvent> all_events;
  std::vector<FrameEvent> events;
  std::size_t offset = 0;
  for (std::size_t i = 0; offset < payload.size(); ++i) {
    std::uint8_t t = table[i % 8];
    std::size_t chunk = (t & 0x7fu) + 1u;
    if (t & 0x80u) chunk *= 64;
    chunk = std::min(chunk, payload.size() - offset);
    events.clear();
    framing->feed(payload.substr(offset, chunk), events);
    offset += chunk;
    for (const FrameEvent& event : events) {
      session.deliver(event);
      if (g_chunk_diff) all_events.push_back(event);
    }
    session.advance(table[(i + 3) % 8] % 32);
  }
  session.finish();

  if (g_chunk_diff) {
    std::unique_ptr<Framing> whole = make(ndjson, kMaxMessageBytes);
    std::vector<FrameEvent> at_once;
    whole->feed(payload, at_once);
    if (render(at_once) != render(all_events) || whole->mid_message() != framing->mid_message())
      violated("decoding the input in one read differs from decoding it in chunks");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // the server's warnings are expected here; keep the fuzzer fast
  const char* diff = std::getenv("LOCKROOM_FUZZ_CHUNK_DIFF");
  g_chunk_diff = diff && *diff && std::string(diff) != "0";
  const char* trace = std::getenv("LOCKROOM_FUZZ_TRACE");
  g_trace = trace && *trace && std::string(trace) != "0";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    run(data, size);
  } catch (const std::exception& e) {
    violated(std::string("an exception escaped: ") + e.what());
  } catch (...) {
    violated("an exception of unknown type escaped");
  }
  return 0;
}
