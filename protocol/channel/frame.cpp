// Frame encoding and the incremental FrameDecoder; see frame.h.
#include "protocol/channel/frame.h"

#include <cassert>
#include <cstdio>

namespace lockroom::protocol::channel {

namespace {

std::string hex8(unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", value & 0xffu);
  return text;
}

Error violation(std::string message) { return make_error(ErrorCode::kInvalidInput, std::move(message)); }

std::string where(Kind kind, std::uint32_t stream) {
  return std::string(kind_name(kind)) + " frame on stream " + std::to_string(stream);
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kControl: return "CONTROL";
    case Kind::kOpen: return "OPEN";
    case Kind::kData: return "DATA";
    case Kind::kWindow: return "WINDOW";
    case Kind::kClose: return "CLOSE";
    case Kind::kReset: return "RESET";
  }
  return "UNKNOWN";
}

void put_u32(std::string& out, std::uint32_t value) {
  out.push_back(static_cast<char>((value >> 24) & 0xff));
  out.push_back(static_cast<char>((value >> 16) & 0xff));
  out.push_back(static_cast<char>((value >> 8) & 0xff));
  out.push_back(static_cast<char>(value & 0xff));
}

std::uint32_t get_u32(const char* bytes) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes);
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
}

void append_frame(std::string& out, Kind kind, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  assert(payload.size() <= kMaxFramePayload);
  out.push_back(static_cast<char>(kind));
  out.push_back(static_cast<char>(flags));
  out.push_back('\0');
  out.push_back('\0');
  put_u32(out, stream);
  put_u32(out, static_cast<std::uint32_t>(payload.size()));
  out.append(payload);
}

Result<FrameHeader> parse_header(const char* bytes, std::uint32_t max_payload) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes);
  FrameHeader h;
  h.flags = b[1];
  h.stream = get_u32(bytes + 4);
  h.length = get_u32(bytes + 8);
  if (b[0] == 0 || b[0] > kMaxKind)
    return violation("unknown frame kind " + hex8(b[0]) + " on stream " + std::to_string(h.stream) +
                     " (known kinds are 0x01-0x06): the peer speaks another protocol version or the byte stream is corrupt");
  h.kind = static_cast<Kind>(b[0]);
  if (b[2] != 0 || b[3] != 0)
    return violation("reserved header bytes of a " + where(h.kind, h.stream) + " are " + hex8(b[2]) + " " + hex8(b[3]) +
                     ", must be zero: the byte stream is corrupt");
  if (h.length > max_payload)
    return violation(where(h.kind, h.stream) + " announces a payload of " + std::to_string(h.length) +
                     " bytes, more than the limit of " + std::to_string(max_payload) + " bytes");
  std::uint8_t allowed_flags = h.kind == Kind::kControl ? kFlagMore : 0;
  if ((h.flags & ~allowed_flags) != 0)
    return violation(where(h.kind, h.stream) + " has unknown flags " + hex8(h.flags) +
                     (h.kind == Kind::kControl ? " (only 0x01 MORE is defined)" : " (this kind takes no flags)"));
  if (h.kind == Kind::kControl && h.stream != 0)
    return violation("CONTROL frame on stream " + std::to_string(h.stream) + ": control messages travel on stream 0 only");
  if (h.kind != Kind::kControl && h.stream == 0)
    return violation(std::string(kind_name(h.kind)) + " frame on stream 0: stream 0 carries only CONTROL frames");
  switch (h.kind) {
    case Kind::kControl:
    case Kind::kData:
      if (h.length == 0) return violation(where(h.kind, h.stream) + " has an empty payload; it must carry at least one byte");
      break;
    case Kind::kOpen:
    case Kind::kClose:
      if (h.length != 0)
        return violation(where(h.kind, h.stream) + " carries " + std::to_string(h.length) + " payload bytes; it must carry none");
      break;
    case Kind::kWindow:
      if (h.length != 4)
        return violation(where(h.kind, h.stream) + " carries " + std::to_string(h.length) +
                         " payload bytes; it must carry exactly 4 (the credit increment)");
      break;
    case Kind::kReset:
      if (h.length < 4 || h.length > 4 + kMaxResetReason)
        return violation(where(h.kind, h.stream) + " carries " + std::to_string(h.length) + " payload bytes; it must carry 4 to " +
                         std::to_string(4 + kMaxResetReason) + " (a code and a short reason)");
      break;
  }
  return h;
}

Result<void> check_prefix(const char* bytes, std::size_t n) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes);
  if (n >= 1 && (b[0] == 0 || b[0] > kMaxKind))
    return violation("unknown frame kind " + hex8(b[0]) +
                     " (known kinds are 0x01-0x06): the peer speaks another protocol version or the byte stream is corrupt");
  if (n >= 4 && (b[2] != 0 || b[3] != 0))
    return violation("reserved header bytes are " + hex8(b[2]) + " " + hex8(b[3]) + ", must be zero: the byte stream is corrupt");
  return {};
}

FrameDecoder::FrameDecoder(std::uint32_t max_payload)
    : max_payload_(max_payload > kMaxFramePayload ? kMaxFramePayload : max_payload) {}

void FrameDecoder::reset() {
  have_ = 0;
  header_done_ = false;
  error_ = Error{};
}

Result<void> FrameDecoder::fail(Error error) {
  error_ = std::move(error);
  return error_;
}

Result<void> FrameDecoder::feed(std::string_view bytes, const Sink& sink) {
  if (failed()) return error_;
  while (!bytes.empty()) {
    // Fast path: a whole frame lies in the input; hand out a view of it without copying.
    if (have_ == 0 && bytes.size() >= kHeaderSize) {
      auto header = parse_header(bytes.data(), max_payload_);
      if (!header) return fail(header.error());
      std::size_t total = kHeaderSize + header->length;
      if (bytes.size() >= total) {
        Frame frame{*header, bytes.substr(kHeaderSize, header->length)};
        bytes.remove_prefix(total);
        if (auto sunk = sink(frame); !sunk) return fail(sunk.error());
        continue;
      }
    }
    // Slow path: gather a partial frame in the bounded buffer.
    if (buffer_.size() < kHeaderSize + max_payload_) buffer_.resize(kHeaderSize + max_payload_);
    std::size_t want = header_done_ ? kHeaderSize + header_.length : kHeaderSize;
    std::size_t take = std::min(want - have_, bytes.size());
    buffer_.replace(have_, take, bytes.data(), take);
    have_ += take;
    bytes.remove_prefix(take);
    if (have_ < want) {
      // Garbage shows in the first bytes: say so now rather than wait for a header that never ends.
      if (!header_done_)
        if (auto early = check_prefix(buffer_.data(), have_); !early) return fail(early.error());
      break;
    }
    if (!header_done_) {
      auto header = parse_header(buffer_.data(), max_payload_);
      if (!header) return fail(header.error());
      header_ = *header;
      header_done_ = true;
      if (header_.length > 0) continue;
    }
    Frame frame{header_, std::string_view(buffer_.data() + kHeaderSize, header_.length)};
    have_ = 0;
    header_done_ = false;
    if (auto sunk = sink(frame); !sunk) return fail(sunk.error());
  }
  return {};
}

}  // namespace lockroom::protocol::channel
