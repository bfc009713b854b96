// bzimage_payload / extract_vmlinux; see kernel_extract.h. Header layout: the kernel's
// Documentation/x86/boot.rst ("The Real-Mode Kernel Header").
#include "server/vm/image/kernel_extract.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "server/common/subprocess.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

namespace {

std::uint32_t le32(std::string_view b, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
}

std::string format_of(std::string_view p) {
  auto starts = [&](std::string_view magic) { return p.substr(0, magic.size()) == magic; };
  if (starts(std::string_view("\xFD" "7zXZ\0", 6))) return "xz";
  if (starts("\x1F\x8B")) return "gzip";
  if (starts("\x28\xB5\x2F\xFD")) return "zstd";
  if (starts("\x02\x21\x4C\x18")) return "lz4";
  if (starts("\x5D\x00")) return "lzma";
  if (starts("BZh")) return "bzip2";
  if (starts("\x89LZO")) return "lzo";
  return "unknown";
}

}  // namespace

Result<BzImagePayload> bzimage_payload(std::string_view b) {
  auto bad = [](const std::string& why) { return make_error(ErrorCode::kInvalidInput, "not a bzImage kernel: " + why); };
  if (b.size() < 0x250) return bad("too short");
  if (b.substr(0x202, 4) != "HdrS") return bad("no \"HdrS\" setup header");
  unsigned setup_sects = static_cast<unsigned char>(b[0x1F1]);
  if (setup_sects == 0) setup_sects = 4;
  std::size_t start = (setup_sects + 1) * 512ull + le32(b, 0x248);
  std::size_t length = le32(b, 0x24C);
  if (length == 0 || start > b.size() || length > b.size() - start) return bad("the payload lies outside the file");
  std::string_view payload = b.substr(start, length);
  return BzImagePayload{payload, format_of(payload)};
}

Result<void> extract_vmlinux(const fs::path& vmlinuz, const fs::path& out) {
  std::ifstream in(vmlinuz, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string bz = text.str();
  auto payload = bzimage_payload(bz);
  if (!payload) return payload.error();
  if (payload->format != "xz")
    return make_error(ErrorCode::kUnavailable, "the kernel payload is " + payload->format + ", not xz; booting the bzImage");
  if (!find_program("xz")) return make_error(ErrorCode::kUnavailable, "xz is not installed (sudo apt-get install xz-utils)");
  fs::path packed = out;
  packed += ".xz";
  {
    std::ofstream o(packed, std::ios::binary);
    o.write(payload->bytes.data(), static_cast<std::streamsize>(payload->bytes.size()));
    if (!o) return make_error(ErrorCode::kUnavailable, "cannot write " + packed.string());
  }
  // The kernel appends the uncompressed size after the xz stream: decode one stream only.
  auto run = run_capture({"xz", "-d", "-f", "--single-stream", packed.string()});
  std::error_code ec;
  fs::remove(packed, ec);
  if (!run || run->exit_code != 0) {
    fs::remove(out, ec);
    return make_error(ErrorCode::kUnavailable, "xz could not unpack the kernel: " + (run ? run->output : run.error().message));
  }
  char magic[4] = {};
  std::ifstream check(out, std::ios::binary);
  check.read(magic, 4);
  if (std::memcmp(magic, "\x7F" "ELF", 4) != 0) {
    fs::remove(out, ec);
    return make_error(ErrorCode::kUnavailable, "the unpacked kernel is not an ELF file");
  }
  return {};
}

}  // namespace lockroom::vm::image
