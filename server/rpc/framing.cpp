// Content-Length and ndjson framing; see framing.h.
#include "server/rpc/framing.h"

#include <algorithm>
#include <cctype>

namespace lockroom::rpc {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A header line for error messages: printable, and short.
std::string quote_line(std::string_view line) {
  std::string out;
  for (char c : line.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (line.size() > 80) out += "...";
  return "\"" + out + "\"";
}

// Index just past the blank line that ends a header block, or npos. Lines end in CRLF; a bare LF
// is tolerated.
std::size_t find_header_end(std::string_view buf, std::size_t from) {
  for (std::size_t i = buf.find('\n', from); i != std::string_view::npos; i = buf.find('\n', i + 1)) {
    std::size_t next = i + 1;
    if (next < buf.size() && buf[next] == '\n') return next + 1;
    if (next + 1 < buf.size() && buf[next] == '\r' && buf[next + 1] == '\n') return next + 2;
  }
  return std::string_view::npos;
}

FrameEvent error_event(std::string text) { return FrameEvent{FrameEvent::Kind::kError, std::move(text)}; }

}  // namespace

ContentLengthFraming::ContentLengthFraming(std::size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

bool ContentLengthFraming::parse_header(std::string_view block, std::string& error, bool& length_known) {
  bool have_length = false;
  std::size_t length = 0;
  length_known = false;
  std::string problem;
  while (!block.empty()) {
    std::size_t nl = block.find('\n');
    std::string_view line = trim(block.substr(0, nl));
    block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
    if (line.empty()) continue;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      if (problem.empty()) problem = "invalid header: " + quote_line(line) + " is not a \"Name: value\" line";
      continue;
    }
    std::string name = lower(trim(line.substr(0, colon)));
    std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-length") {
      std::size_t n = 0;
      bool digits = !value.empty() && value.size() <= 19 &&
                    std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits) {
        error = "invalid header: Content-Length must be a decimal byte count, got " + quote_line(value);
        return false;
      }
      for (char c : value) n = n * 10 + static_cast<std::size_t>(c - '0');
      if (have_length && n != length) {
        error = "invalid header: two different Content-Length values";
        return false;
      }
      have_length = true;
      length = n;
    } else if (name == "content-type") {
      std::string v = lower(value);
      std::size_t cs = v.find("charset=");
      if (cs != std::string::npos) {
        std::string_view rest = std::string_view(v).substr(cs + 8);
        std::string charset(trim(rest.substr(0, rest.find(';'))));
        charset.erase(std::remove(charset.begin(), charset.end(), '"'), charset.end());
        if ((charset != "utf-8" && charset != "utf8") && problem.empty())
          problem = "invalid header: only utf-8 content is supported, got charset " + quote_line(charset);
      }
    }
    // Other headers are ignored, as LSP allows.
  }
  if (!have_length) {
    error = problem.empty() ? "invalid header: the Content-Length header is missing" : problem;
    return false;
  }
  // With a length the message can be skipped exactly, even when another header is wrong.
  body_length_ = length;
  length_known = true;
  if (!problem.empty()) {
    error = problem;
    return false;
  }
  return true;
}

void ContentLengthFraming::on_header(std::string_view block, std::vector<FrameEvent>& out) {
  std::string error;
  bool length_known = false;
  bool ok = parse_header(block, error, length_known);
  if (!ok && !length_known) {
    // Nothing says where the body ends: skip to the next header.
    out.push_back(error_event(error + "; skipping input up to the next Content-Length header"));
    state_ = State::kSkipHeader;
    return;
  }
  if (!ok || body_length_ > max_message_bytes_) {
    if (ok)
      error = "message of " + std::to_string(body_length_) + " bytes exceeds the limit of " + std::to_string(max_message_bytes_) +
              " bytes and was skipped (the limit is set with --max-message-size)";
    out.push_back(error_event(error));
    skip_remaining_ = body_length_;
    state_ = skip_remaining_ ? State::kSkipBody : State::kHeader;
    return;
  }
  state_ = State::kBody;
}

// A header block longer than kMaxHeaderBytes (judged the same however the bytes were split):
// reported, then the input is searched for the next Content-Length header.
void ContentLengthFraming::overlong_header(std::vector<FrameEvent>& out) {
  out.push_back(error_event("invalid header: no blank line within " + std::to_string(kMaxHeaderBytes) +
                            " bytes; skipping input up to the next Content-Length header"));
  state_ = State::kSkipHeader;
}

void ContentLengthFraming::feed(std::string_view input, std::vector<FrameEvent>& out) {
  std::string carry;  // the rest of a header block that was split across reads
  while (!input.empty()) {
    switch (state_) {
      case State::kSkipBody: {
        std::size_t n = std::min(skip_remaining_, input.size());
        input.remove_prefix(n);
        skip_remaining_ -= n;
        if (skip_remaining_ == 0) state_ = State::kHeader;
        break;
      }
      case State::kBody: {
        if (buffer_.empty() && input.size() >= body_length_) {
          // The whole body is here: no staging copy.
          out.push_back(FrameEvent{FrameEvent::Kind::kMessage, std::string(input.substr(0, body_length_))});
          input.remove_prefix(body_length_);
          state_ = State::kHeader;
          break;
        }
        std::size_t n = std::min(body_length_ - buffer_.size(), input.size());
        if (buffer_.empty()) buffer_.reserve(std::min<std::size_t>(body_length_, 1u << 20));
        buffer_.append(input.substr(0, n));
        input.remove_prefix(n);
        if (buffer_.size() == body_length_) {
          out.push_back(FrameEvent{FrameEvent::Kind::kMessage, std::move(buffer_)});
          buffer_.clear();
          state_ = State::kHeader;
        }
        break;
      }
      case State::kHeader: {
        if (buffer_.empty()) {
          // Stray line breaks between messages are harmless; drop them.
          std::size_t lead = input.find_first_not_of("\r\n");
          input.remove_prefix(lead == std::string_view::npos ? input.size() : lead);
          if (input.empty()) break;
          std::size_t end = find_header_end(input, 0);
          if (end != std::string_view::npos && end <= kMaxHeaderBytes) {
            on_header(input.substr(0, end), out);
            input.remove_prefix(end);
            break;
          }
          if (end != std::string_view::npos) {  // a complete block, but over the limit
            std::string rest(input.substr(1));  // input may be a view of carry itself
            carry.swap(rest);
            input = carry;
            overlong_header(out);
            break;
          }
          buffer_.assign(input);
          input = {};
        } else {
          std::size_t searched = buffer_.size() >= 3 ? buffer_.size() - 3 : 0;
          buffer_.append(input);
          input = {};
          std::size_t end = find_header_end(buffer_, searched);
          if (end != std::string::npos && end > kMaxHeaderBytes) {
            carry.assign(buffer_, 1);
            buffer_.clear();
            input = carry;
            overlong_header(out);
            break;
          }
          if (end != std::string::npos) {
            carry.assign(buffer_, end);
            buffer_.resize(end);
            on_header(buffer_, out);
            buffer_.clear();
            input = carry;
            break;
          }
        }
        if (buffer_.size() > kMaxHeaderBytes) {
          // Resume the search after this block's first byte, so its own Content-Length (if it has
          // one) is not found again.
          carry.assign(buffer_, 1);
          buffer_.clear();
          input = carry;
          overlong_header(out);
        }
        break;
      }
      case State::kSkipHeader: {
        static constexpr std::string_view kMarker = "content-length:";
        buffer_.append(input);
        input = {};
        std::string low = lower(buffer_);
        std::size_t at = low.find(kMarker);
        if (at == std::string::npos) {
          // Keep only a tail that could be the start of the marker.
          if (buffer_.size() >= kMarker.size()) buffer_.erase(0, buffer_.size() - (kMarker.size() - 1));
          break;
        }
        carry.assign(buffer_, at);
        buffer_.clear();
        input = carry;
        state_ = State::kHeader;
        break;
      }
    }
  }
}

std::string ContentLengthFraming::encode(std::string_view message) const {
  std::string out = "Content-Length: " + std::to_string(message.size()) + "\r\n\r\n";
  out.append(message);
  return out;
}

NdjsonFraming::NdjsonFraming(std::size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

void NdjsonFraming::feed(std::string_view input, std::vector<FrameEvent>& out) {
  while (!input.empty()) {
    std::size_t nl = input.find('\n');
    std::string_view piece = input.substr(0, nl);
    input.remove_prefix(nl == std::string_view::npos ? input.size() : nl + 1);
    if (skipping_) {
      if (nl != std::string_view::npos) skipping_ = false;
      continue;
    }
    if (buffer_.size() + piece.size() > max_message_bytes_) {
      out.push_back(error_event("message line longer than the limit of " + std::to_string(max_message_bytes_) +
                                " bytes was skipped (the limit is set with --max-message-size)"));
      buffer_.clear();
      skipping_ = nl == std::string_view::npos;
      continue;
    }
    buffer_.append(piece);
    if (nl == std::string_view::npos) break;
    if (!buffer_.empty() && buffer_.back() == '\r') buffer_.pop_back();
    if (buffer_.find_first_not_of(" \t") != std::string::npos)
      out.push_back(FrameEvent{FrameEvent::Kind::kMessage, std::move(buffer_)});
    buffer_.clear();
  }
}

std::string NdjsonFraming::encode(std::string_view message) const {
  // Serialised JSON never holds a raw newline, so a line is a message.
  std::string out(message);
  out.push_back('\n');
  return out;
}

std::unique_ptr<Framing> make_framing(FramingKind kind, std::size_t max_message_bytes) {
  if (kind == FramingKind::kNdjson) return std::make_unique<NdjsonFraming>(max_message_bytes);
  return std::make_unique<ContentLengthFraming>(max_message_bytes);
}

}  // namespace lockroom::rpc
