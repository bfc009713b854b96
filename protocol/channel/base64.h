// Base64 (RFC 4648, standard alphabet, padded) for binary payloads in channel control messages
// (file contents, entropy). Pure; decoding rejects anything that is not canonical base64.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lockroom::protocol::channel {

std::string base64_encode(std::string_view bytes);
// Null when `text` is not valid padded base64 (wrong length, bad character, bad padding).
std::optional<std::string> base64_decode(std::string_view text);
// The decoded size of valid base64 of this length (for bounds checks before decoding).
inline std::size_t base64_decoded_bound(std::size_t encoded) { return encoded / 4 * 3; }

}  // namespace lockroom::protocol::channel
