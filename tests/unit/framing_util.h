// Helpers for the framing tests: feed a decoder in given pieces and look at what came out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/rpc/framing.h"

namespace lockroom::testing {

using rpc::FrameEvent;
using rpc::Framing;

inline std::vector<FrameEvent> feed_all(Framing& framing, std::string_view bytes) {
  std::vector<FrameEvent> out;
  framing.feed(bytes, out);
  return out;
}

// Feeds `bytes` split at the given (ascending) offsets.
inline std::vector<FrameEvent> feed_split(Framing& framing, std::string_view bytes, const std::vector<std::size_t>& cuts) {
  std::vector<FrameEvent> out;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    framing.feed(bytes.substr(from, cut - from), out);
    from = cut;
  }
  framing.feed(bytes.substr(from), out);
  return out;
}

inline std::vector<FrameEvent> feed_bytewise(Framing& framing, std::string_view bytes) {
  std::vector<FrameEvent> out;
  for (char c : bytes) framing.feed(std::string_view(&c, 1), out);
  return out;
}

inline std::vector<FrameEvent> feed_in_pieces_of(Framing& framing, std::string_view bytes, std::size_t piece) {
  std::vector<FrameEvent> out;
  for (std::size_t i = 0; i < bytes.size(); i += piece) framing.feed(bytes.substr(i, piece), out);
  return out;
}

// "M:<text>" for a message, "E:<text>" for an error: readable in a failed assertion.
inline std::vector<std::string> render(const std::vector<FrameEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back((e.kind == FrameEvent::Kind::kMessage ? "M:" : "E:") + e.text);
  return out;
}

inline std::vector<std::string> messages(const std::vector<FrameEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e.kind == FrameEvent::Kind::kMessage) out.push_back(e.text);
  return out;
}

inline std::vector<std::string> errors(const std::vector<FrameEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e.kind == FrameEvent::Kind::kError) out.push_back(e.text);
  return out;
}

inline std::string frame(std::string_view body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

}  // namespace lockroom::testing
