// Framing for the transcript runner; see wire.h.
#include "wire.h"

#include <algorithm>
#include <cctype>

namespace transcript {

namespace {

constexpr std::size_t kMaxHeaderBytes = 8u << 10;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::string frame(Framing framing, std::string_view body) {
  if (framing == Framing::kNdjson) return std::string(body) + "\n";
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

FrameReader::Status FrameReader::next(nlohmann::json& message, std::string& problem) {
  return framing_ == Framing::kNdjson ? ndjson(message, problem) : content_length(message, problem);
}

FrameReader::Status FrameReader::content_length(nlohmann::json& message, std::string& problem) {
  if (buffer_.empty()) return Status::kIncomplete;
  std::size_t end = buffer_.find("\r\n\r\n");
  if (end == std::string::npos) {
    // Judge what is already there: a frame starts with one of the two headers LSP defines.
    auto could_start = [&](std::string_view header) {
      std::size_t n = std::min(buffer_.size(), header.size());
      return lower(std::string_view(buffer_).substr(0, n)) == header.substr(0, n);
    };
    if (!could_start("content-length: ") && !could_start("content-type: ")) {
      problem = "output that does not start with a Content-Length or Content-Type header";
      return Status::kMalformed;
    }
    if (buffer_.size() > kMaxHeaderBytes) {
      problem = "a header block longer than " + std::to_string(kMaxHeaderBytes) + " bytes";
      return Status::kMalformed;
    }
    return Status::kIncomplete;
  }
  std::string_view headers = std::string_view(buffer_).substr(0, end + 2);
  bool have_length = false;
  std::size_t length = 0;
  while (!headers.empty()) {
    std::size_t eol = headers.find("\r\n");
    std::string_view line = headers.substr(0, eol);
    headers.remove_prefix(eol + 2);
    std::size_t colon = line.find(": ");
    std::string name = lower(line.substr(0, colon));
    std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 2);
    if (colon == std::string_view::npos || colon == 0) {
      problem = "a header line that is not \"Name: value\"";
      return Status::kMalformed;
    }
    if (name == "content-length") {
      if (have_length || value.empty() || value.size() > 12 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        problem = "a missing, repeated or non-numeric Content-Length";
        return Status::kMalformed;
      }
      have_length = true;
      length = std::stoul(std::string(value));
    } else if (name != "content-type") {
      problem = "an unexpected header \"" + name + "\"";
      return Status::kMalformed;
    }
  }
  if (!have_length) {
    problem = "a header block without Content-Length";
    return Status::kMalformed;
  }
  std::size_t start = end + 4;
  if (buffer_.size() - start < length) return Status::kIncomplete;
  Status status = body(std::string_view(buffer_).substr(start, length), message, problem);
  if (status == Status::kMessage) {
    last_body_ = buffer_.substr(start, length);
    buffer_.erase(0, start + length);
  }
  return status;
}

FrameReader::Status FrameReader::ndjson(nlohmann::json& message, std::string& problem) {
  std::size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return Status::kIncomplete;
  Status status = body(std::string_view(buffer_).substr(0, nl), message, problem);
  if (status == Status::kMessage) {
    last_body_ = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
  }
  return status;
}

FrameReader::Status FrameReader::body(std::string_view text, nlohmann::json& message, std::string& problem) {
  try {
    message = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    problem = std::string("a frame whose body is not JSON (") + e.what() + ")";
    return Status::kMalformed;
  }
  auto version = message.is_object() ? message.find("jsonrpc") : message.end();
  if (!message.is_object() || version == message.end() || *version != "2.0") {
    problem = "a frame whose body is not a JSON-RPC 2.0 message object";
    return Status::kMalformed;
  }
  return Status::kMessage;
}

}  // namespace transcript
