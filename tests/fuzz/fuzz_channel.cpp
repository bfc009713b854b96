// fuzz-channel: libFuzzer over what a hostile guest can send the host on its channel.
//
// Input layout (every byte string is a valid input):
//   byte 0      chunking: chunk i is (t & 0x3f) + 1 bytes, times 256 when bit 6 of t is set,
//               where t = byte (i % 4) of the 4-byte table at bytes 0..3
//   byte 4      flags: bit 0 starts with the handshake already done (so stream frames are legal
//               from the first byte); bit 1 makes the host's receive limits small (4 KiB frames,
//               4 KiB window, 64 KiB control messages, 4 streams); bits 2-3 pick how the host
//               answers streams (consume, echo data back, half-close, reset)
//   the rest    the bytes "from the guest"
// Everything goes through FrameDecoder and the host's Session exactly as GuestChannel does;
// every control message is classified as JSON-RPC and every parser of the message set runs on
// its params or result (the agent's parsers and the host's). The host answers stream events,
// so its own sends (credit, data within credit, closes, resets, acks) are exercised too.
// Checks: no exception escapes; every error has a message; the decoder never holds more than
// one bounded frame; the stream table stays within its limit; everything the host writes
// decodes as well-formed frames within the guest's declared frame size; after an error the
// decoder stays failed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/channel/frame.h"
#include "protocol/channel/messages.h"
#include "protocol/channel/session.h"
#include "protocol/jsonrpc.h"

namespace {

namespace wire = lockroom::protocol::channel;
using lockroom::Result;
using lockroom::protocol::json;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz-channel invariant broken: %s\n", what);
  std::abort();
}

void parse_everything(const json& j) {
  // Results the host parses (a lying agent's replies) and params the agent parses.
  (void)wire::parse_hello_result(j);
  (void)wire::parse_health_result(j);
  (void)wire::parse_resume_result(j);
  (void)wire::parse_limits_result(j);
  (void)wire::parse_process_start_result(j, false);
  (void)wire::parse_process_start_result(j, true);
  (void)wire::parse_process_exited(j);
  (void)wire::parse_file_read_result(j, false);
  (void)wire::parse_file_read_result(j, true);
  (void)wire::parse_file_write_result(j, false);
  (void)wire::parse_file_stat(j);
  (void)wire::parse_file_list_result(j);
  (void)wire::parse_hello_params(j);
  (void)wire::parse_resume_params(j);
  (void)wire::parse_process_start_params(j);
  (void)wire::parse_process_signal_params(j);
  (void)wire::parse_process_resize_params(j);
  (void)wire::parse_file_read_params(j);
  (void)wire::parse_file_write_params(j);
  (void)wire::parse_file_list_params(j);
}

void on_control(std::string_view text) {
  auto message = lockroom::protocol::classify(text);
  if (auto* r = std::get_if<lockroom::protocol::Response>(&message)) {
    if (r->result) parse_everything(*r->result);
  } else if (auto* n = std::get_if<lockroom::protocol::Notification>(&message)) {
    parse_everything(n->params);
  } else if (auto* q = std::get_if<lockroom::protocol::Request>(&message)) {
    parse_everything(q->params);
  }
}

// Checks that what the host wrote is well-formed and within the guest's frame size.
void check_output(const std::string& out, std::uint32_t peer_max_frame) {
  wire::FrameDecoder decoder(wire::kMaxFramePayload);
  auto r = decoder.feed(out, [&](const wire::Frame& f) -> Result<void> {
    if (f.payload.size() > peer_max_frame) fail("the host wrote a frame larger than the guest accepts");
    return {};
  });
  if (!r) fail("the host wrote a malformed frame");
  if (decoder.mid_frame()) fail("the host wrote half a frame");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  const std::uint8_t* table = data;
  std::uint8_t flags = data[4];
  std::string_view input(reinterpret_cast<const char*>(data + 5), size - 5);

  wire::Settings mine;
  if (flags & 2) mine = wire::Settings{wire::kMinFramePayload, wire::kMinWindow, 4, wire::kMinControl};
  wire::Session host(wire::Side::kHost, mine);
  wire::FrameDecoder decoder(host.mine().max_frame);
  wire::Settings guest;  // what a guest declares
  if (flags & 1 && !host.establish(guest)) fail("default settings refused");
  int answer = (flags >> 2) & 3;

  auto sink = [&](const wire::Frame& frame) -> Result<void> {
    if (frame.payload.size() > host.mine().max_frame) fail("decoder passed an oversized frame");
    auto event = host.receive(frame);
    if (!event) return event.error();
    using Type = wire::Event::Type;
    switch (event->type) {
      case Type::kControl:
        if (event->data.size() > host.mine().max_control) fail("control message over the limit");
        on_control(event->data);
        if (!host.established()) (void)host.establish(guest);  // the first message plays the hello reply
        break;
      case Type::kOpened:
        if (answer == 1) host.send_data(event->stream, "input for the guest");
        if (answer == 2) host.close_stream(event->stream);
        if (answer == 3) host.reset_stream(event->stream, wire::reset_code::kCancelled, "fuzz");
        break;
      case Type::kData:
        host.consumed(event->stream, event->data.size());
        if (answer == 1) host.send_data(event->stream, event->data);
        break;
      case Type::kWritable:
        if (answer == 1 && host.send_credit(event->stream) == 0) fail("writable without credit");
        break;
      case Type::kPeerClosed:
        if (answer != 0) host.close_stream(event->stream);
        break;
      default:
        break;
    }
    if (host.stream_count() > host.mine().max_streams) fail("stream table over its limit");
    return {};
  };

  bool failed = false;
  std::size_t i = 0;
  while (!input.empty()) {
    std::uint8_t t = table[i++ % 4];
    std::size_t chunk = (t & 0x3f) + 1;
    if (t & 0x40) chunk *= 256;
    std::string_view part = input.substr(0, chunk);
    input.remove_prefix(part.size());
    auto fed = decoder.feed(part, sink);
    if (!fed) {
      if (fed.error().message.empty()) fail("an error without a message");
      failed = true;
      break;
    }
    check_output(host.take_output(), host.established() ? host.peer().max_frame : wire::kMinFramePayload);
  }
  if (failed) {
    auto again = decoder.feed("x", sink);
    if (again) fail("a failed decoder accepted more input");
  }
  return 0;
}
