// How process output travels to the editor: as text when it is UTF-8, as base64 otherwise.
//
// Output arrives in arbitrary chunks, which can split a multi-byte character. OutputTextEncoder
// holds back an incomplete character at the end of a chunk and prepends it to the next, so a
// UTF-8 stream is always delivered as text; a chunk that is not valid UTF-8 goes out as base64
// (with `encoding: "base64"` on the wire). Pure; one encoder per output stream.
#pragma once

#include <string>
#include <string_view>

namespace lockroom::core {

struct OutputChunk {
  std::string data;     // UTF-8 text, or base64 when `base64`
  bool base64 = false;
  bool empty() const { return data.empty(); }
};

class OutputTextEncoder {
 public:
  OutputChunk encode(std::string_view bytes);
  // At end of stream: whatever is held back, as base64 (an incomplete character is not text).
  OutputChunk flush();

 private:
  std::string held_;  // at most 3 bytes: the start of a character split across chunks
};

// Length of the longest prefix of `bytes` that is valid UTF-8, and whether what follows it is
// only an incomplete (but so far valid) character at the very end.
struct Utf8Scan {
  std::size_t valid_prefix = 0;
  bool incomplete_tail = false;
};
Utf8Scan scan_utf8(std::string_view bytes);

std::string base64_encode(std::string_view bytes);

}  // namespace lockroom::core
