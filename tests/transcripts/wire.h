// Wire framing as the transcript runner sees it: wrapping what it sends, and a strict reader for
// what the server sends back.
//
// The reader is deliberately stricter than the server's own decoder: stdout carries protocol and
// nothing else, so anything that is not a well-formed frame holding one JSON-RPC 2.0 object is a
// failure, reported with the offending bytes. Pure; used only by the runner.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace transcript {

enum class Framing { kContentLength, kNdjson };

// The bytes that carry `body` as one message.
std::string frame(Framing framing, std::string_view body);

class FrameReader {
 public:
  enum class Status { kMessage, kIncomplete, kMalformed };

  explicit FrameReader(Framing framing) : framing_(framing) {}
  void append(std::string_view bytes) { buffer_.append(bytes); }
  // Takes the next whole message off the buffer. kMalformed leaves a description in `problem`
  // and the buffer untouched, so the caller can show the bytes.
  Status next(nlohmann::json& message, std::string& problem);
  const std::string& pending() const { return buffer_; }
  // The exact body of the last message next() returned, for logs.
  const std::string& last_body() const { return last_body_; }

 private:
  Status content_length(nlohmann::json& message, std::string& problem);
  Status ndjson(nlohmann::json& message, std::string& problem);
  Status body(std::string_view text, nlohmann::json& message, std::string& problem);

  Framing framing_;
  std::string buffer_;
  std::string last_body_;
};

}  // namespace transcript
