// Git objects in the agent: pack indexing, object reading, deltas, trees; see workspace_objects.h.
#include "guest/workspace_objects.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace {

constexpr std::size_t kIdBytes = 20;
constexpr int kOfsDelta = 6;
constexpr int kRefDelta = 7;
constexpr int kMaxDeltaDepth = 64;
constexpr std::uint64_t kMaxHeldBytes = 128u << 20;  // index_pack: inflated objects in memory at once

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}
void put_be32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

std::string sha1(std::string_view a, std::string_view b = {}) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr);
  EVP_DigestUpdate(ctx, a.data(), a.size());
  if (!b.empty()) EVP_DigestUpdate(ctx, b.data(), b.size());
  EVP_DigestFinal_ex(ctx, out, &len);
  EVP_MD_CTX_free(ctx);
  return std::string(reinterpret_cast<char*>(out), len);
}

const char* type_name(ObjectType t) {
  switch (t) {
    case ObjectType::kCommit: return "commit";
    case ObjectType::kTree: return "tree";
    case ObjectType::kBlob: return "blob";
    case ObjectType::kTag: return "tag";
  }
  return "blob";
}

// Inflates the zlib stream at the start of `in` into exactly `size` bytes. Sets `used` to the
// compressed bytes it took. nullopt when the stream is malformed, cut short, or not `size` long.
std::optional<std::string> inflate_exact(std::string_view in, std::size_t size, std::size_t& used) {
  std::string out(size + 1, '\0');  // one byte more than expected shows a stream that is too long
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), UINT32_MAX));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  bool ok = rc == Z_STREAM_END && z.total_out == size;
  used = z.total_in;
  inflateEnd(&z);
  if (!ok) return std::nullopt;
  out.resize(size);
  return out;
}

// The pack object header at `at`: type, inflated size, and where the rest begins.
struct EntryHeader {
  int type = 0;
  std::uint64_t size = 0;
  std::size_t data = 0;           // after the header (and the delta base)
  std::uint64_t base_offset = 0;  // kOfsDelta
  std::string base_id;            // kRefDelta
};
std::optional<EntryHeader> read_entry_header(std::string_view pack, std::size_t at) {
  EntryHeader h;
  auto byte = [&](std::size_t i) -> int { return i < pack.size() ? static_cast<unsigned char>(pack[i]) : -1; };
  int c = byte(at++);
  if (c < 0) return std::nullopt;
  h.type = (c >> 4) & 7;
  h.size = static_cast<std::uint64_t>(c & 15);
  for (int shift = 4; c & 0x80; shift += 7) {
    if (shift > 56 || (c = byte(at++)) < 0) return std::nullopt;
    h.size |= static_cast<std::uint64_t>(c & 0x7f) << shift;
  }
  if (h.type == kOfsDelta) {
    if ((c = byte(at++)) < 0) return std::nullopt;
    std::uint64_t ofs = static_cast<std::uint64_t>(c & 0x7f);
    while (c & 0x80) {
      if (ofs > (UINT64_MAX >> 8) || (c = byte(at++)) < 0) return std::nullopt;
      ofs = ((ofs + 1) << 7) | static_cast<std::uint64_t>(c & 0x7f);
    }
    h.base_offset = ofs;
  } else if (h.type == kRefDelta) {
    if (pack.size() - std::min(pack.size(), at) < kIdBytes) return std::nullopt;
    h.base_id.assign(pack.substr(at, kIdBytes));
    at += kIdBytes;
  } else if (h.type < 1 || h.type > 4) {
    return std::nullopt;
  }
  h.data = at;
  return h;
}

std::optional<std::uint64_t> delta_varint(std::string_view d, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; at < d.size(); shift += 7) {
    if (shift > 56) return std::nullopt;
    auto c = static_cast<unsigned char>(d[at++]);
    v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string object_id(ObjectType type, std::string_view data) {
  std::string header = std::string(type_name(type)) + " " + std::to_string(data.size());
  header.push_back('\0');
  return sha1(header, data);
}

std::optional<std::string> apply_delta(std::string_view base, std::string_view delta, std::size_t max) {
  std::size_t at = 0;
  auto base_size = delta_varint(delta, at);
  auto result_size = delta_varint(delta, at);
  if (!base_size || !result_size || *base_size != base.size() || *result_size > max) return std::nullopt;
  std::string out;
  out.reserve(static_cast<std::size_t>(*result_size));
  while (at < delta.size()) {
    auto cmd = static_cast<unsigned char>(delta[at++]);
    if (cmd & 0x80) {
      std::uint64_t offset = 0, size = 0;
      for (int i = 0; i < 4; ++i)
        if (cmd & (1 << i)) {
          if (at >= delta.size()) return std::nullopt;
          offset |= std::uint64_t{static_cast<unsigned char>(delta[at++])} << (8 * i);
        }
      for (int i = 0; i < 3; ++i)
        if (cmd & (0x10 << i)) {
          if (at >= delta.size()) return std::nullopt;
          size |= std::uint64_t{static_cast<unsigned char>(delta[at++])} << (8 * i);
        }
      if (size == 0) size = 0x10000;
      if (offset > base.size() || size > base.size() - offset || out.size() + size > *result_size) return std::nullopt;
      out.append(base.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(size)));
    } else if (cmd != 0) {
      if (cmd > delta.size() - at || out.size() + cmd > *result_size) return std::nullopt;
      out.append(delta.substr(at, cmd));
      at += cmd;
    } else {
      return std::nullopt;  // reserved
    }
  }
  if (out.size() != *result_size) return std::nullopt;
  return out;
}

std::optional<std::vector<TreeEntry>> parse_tree(std::string_view data) {
  std::vector<TreeEntry> out;
  std::size_t at = 0;
  while (at < data.size()) {
    std::size_t space = data.find(' ', at);
    if (space == std::string_view::npos || space == at || space - at > 7) return std::nullopt;
    std::uint32_t mode = 0;
    for (std::size_t i = at; i < space; ++i) {
      if (data[i] < '0' || data[i] > '7') return std::nullopt;
      mode = mode * 8 + static_cast<std::uint32_t>(data[i] - '0');
    }
    std::size_t nul = data.find('\0', space + 1);
    if (nul == std::string_view::npos || nul == space + 1 || data.size() - nul - 1 < kIdBytes) return std::nullopt;
    TreeEntry e;
    e.mode = mode;
    e.name.assign(data.substr(space + 1, nul - space - 1));
    e.raw_id.assign(data.substr(nul + 1, kIdBytes));
    out.push_back(std::move(e));
    at = nul + 1 + kIdBytes;
  }
  return out;
}

std::optional<std::string> commit_tree(std::string_view data) {
  if (data.size() < 46 || data.substr(0, 5) != "tree " || data[45] != '\n') return std::nullopt;
  std::string_view hex = data.substr(5, 40);
  if (!protocol::channel::is_object_id(hex)) return std::nullopt;
  std::string raw(kIdBytes, '\0');
  for (std::size_t i = 0; i < kIdBytes; ++i) raw[i] = static_cast<char>(std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  return raw;
}

Result<IndexedPack> index_pack(std::string_view pack, std::size_t max_object) {
  auto bad = [](const std::string& why) { return make_error(ErrorCode::kInvalidInput, "pack: " + why); };
  const auto* bytes = reinterpret_cast<const unsigned char*>(pack.data());
  if (pack.size() < 12 + kIdBytes || pack.substr(0, 4) != "PACK") return bad("no pack header");
  std::uint32_t version = be32(bytes + 4), count = be32(bytes + 8);
  if (version != 2 && version != 3) return bad("version " + std::to_string(version));
  std::string_view body = pack.substr(0, pack.size() - kIdBytes);
  if (sha1(body) != pack.substr(body.size())) return bad("the trailing checksum does not match");
  if (count > body.size() / 2) return bad("more objects announced than the bytes can hold");

  struct Object {
    std::uint64_t offset = 0;
    std::uint32_t crc = 0;
    int type = 0;  // resolved type once known
    std::string data;
    bool resolved = false;
    std::uint64_t base_offset = 0;  // deltas
    std::string base_id;
    std::string id;
  };
  std::vector<Object> objects(count);
  std::map<std::uint64_t, std::size_t> by_offset;
  std::size_t at = 12;
  std::uint64_t held = 0;  // every object is kept whole until the deltas are resolved
  for (std::uint32_t i = 0; i < count; ++i) {
    auto h = read_entry_header(body, at);
    if (!h) return bad("object " + std::to_string(i) + " has a malformed header");
    if (h->size > max_object) return bad("object " + std::to_string(i) + " is larger than " + std::to_string(max_object) + " bytes");
    if ((held += h->size) > kMaxHeldBytes) return bad("the objects hold more than " + std::to_string(kMaxHeldBytes) + " bytes");
    std::size_t used = 0;
    auto data = inflate_exact(body.substr(h->data), static_cast<std::size_t>(h->size), used);
    if (!data) return bad("object " + std::to_string(i) + " does not inflate to its size");
    Object& o = objects[i];
    o.offset = at;
    std::size_t end = h->data + used;
    o.crc = static_cast<std::uint32_t>(crc32(0, bytes + at, static_cast<uInt>(end - at)));
    o.data = std::move(*data);
    if (h->type == kOfsDelta) {
      if (h->base_offset == 0 || h->base_offset > at) return bad("object " + std::to_string(i) + " is a delta against an offset outside the pack");
      o.base_offset = at - h->base_offset;
    } else if (h->type == kRefDelta) {
      o.base_id = h->base_id;
    } else {
      o.type = h->type;
      o.resolved = true;
      o.id = object_id(static_cast<ObjectType>(o.type), o.data);
    }
    o.type = h->type;
    by_offset[at] = i;
    at = end;
  }
  if (at != body.size()) return bad("bytes left after the last object");

  // Deltas, until every one is resolved (a base may be a delta itself, or come later).
  std::map<std::string, std::size_t> by_id;
  for (std::size_t i = 0; i < objects.size(); ++i)
    if (objects[i].resolved) by_id[objects[i].id] = i;
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; i < objects.size(); ++i) {
      Object& o = objects[i];
      if (o.resolved) continue;
      const Object* base = nullptr;
      if (o.type == kOfsDelta) {
        auto it = by_offset.find(o.base_offset);
        if (it == by_offset.end()) return bad("a delta's base offset is not an object's start");
        base = &objects[it->second];
      } else {
        auto it = by_id.find(o.base_id);
        if (it != by_id.end()) base = &objects[it->second];
      }
      if (!base || !base->resolved) continue;
      auto data = apply_delta(base->data, o.data, max_object);
      if (!data) return bad("a delta does not apply to its base");
      o.type = base->type;
      o.data = std::move(*data);
      o.id = object_id(static_cast<ObjectType>(o.type), o.data);
      o.resolved = true;
      by_id[o.id] = i;
      progress = true;
    }
  }
  IndexedPack out;
  std::vector<std::size_t> order(objects.size());
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (!objects[i].resolved) return bad("a delta's base is not in the pack (a thin pack)");
    out.ids.push_back(objects[i].id);
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return objects[a].id < objects[b].id; });
  for (std::size_t k = 1; k < order.size(); ++k)
    if (objects[order[k]].id == objects[order[k - 1]].id) return bad("an object appears twice");

  // The .idx, version 2 (offsets of 2 GiB and beyond go to the large-offset table).
  std::string& idx = out.idx;
  idx.append("\377tOc", 4);
  put_be32(idx, 2);
  std::array<std::uint32_t, 256> fanout{};
  for (std::size_t i : order) fanout[static_cast<unsigned char>(objects[i].id[0])]++;
  for (std::size_t b = 1; b < 256; ++b) fanout[b] += fanout[b - 1];
  for (auto f : fanout) put_be32(idx, f);
  for (std::size_t i : order) idx.append(objects[i].id);
  for (std::size_t i : order) put_be32(idx, objects[i].crc);
  std::vector<std::uint64_t> large;
  for (std::size_t i : order) {
    std::uint64_t off = objects[i].offset;
    if (off < 0x80000000u) {
      put_be32(idx, static_cast<std::uint32_t>(off));
    } else {
      put_be32(idx, 0x80000000u | static_cast<std::uint32_t>(large.size()));
      large.push_back(off);
    }
  }
  for (auto off : large) {
    put_be32(idx, static_cast<std::uint32_t>(off >> 32));
    put_be32(idx, static_cast<std::uint32_t>(off));
  }
  std::string_view trailer = pack.substr(body.size());
  idx.append(trailer);
  idx.append(sha1(idx));
  out.checksum_hex = protocol::channel::id_to_hex(trailer);
  return out;
}

// ---- reading a repository's objects

struct ObjectReader::Pack {
  const unsigned char* idx = nullptr;
  std::size_t idx_size = 0;
  const unsigned char* pack = nullptr;
  std::size_t pack_size = 0;
  std::uint32_t count = 0;
  ~Pack() {
    if (idx) ::munmap(const_cast<unsigned char*>(idx), idx_size);
    if (pack) ::munmap(const_cast<unsigned char*>(pack), pack_size);
  }
};

namespace {

const unsigned char* map_file(const std::string& path, std::size_t& size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return nullptr;
  struct stat st{};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    size = static_cast<std::size_t>(st.st_size);
    p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<const unsigned char*>(p);
}

}  // namespace

ObjectReader::ObjectReader(std::string git_dir, std::size_t max_object) : git_dir_(std::move(git_dir)), max_object_(max_object) {}
ObjectReader::~ObjectReader() = default;

void ObjectReader::open_packs() {
  if (packs_opened_) return;
  packs_opened_ = true;
  std::string dir = git_dir_ + "/objects/pack";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".idx") == 0) names.push_back(name.substr(0, name.size() - 4));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& base : names) {
    auto p = std::make_unique<Pack>();
    p->idx = map_file(dir + "/" + base + ".idx", p->idx_size);
    p->pack = map_file(dir + "/" + base + ".pack", p->pack_size);
    if (!p->idx || !p->pack || p->idx_size < 8 + 1024 + 2 * kIdBytes || std::memcmp(p->idx, "\377tOc", 4) != 0 || be32(p->idx + 4) != 2 ||
        p->pack_size < 12 + kIdBytes)
      continue;
    p->count = be32(p->idx + 8 + 255 * 4);
    std::uint64_t need = 8 + 1024 + std::uint64_t{p->count} * (kIdBytes + 8) + 2 * kIdBytes;
    if (need > p->idx_size) continue;
    packs_.push_back(std::move(p));
  }
}

std::optional<std::uint64_t> ObjectReader::find(Pack& p, std::string_view raw_id) const {
  auto first = static_cast<unsigned char>(raw_id[0]);
  std::uint32_t lo = first ? be32(p.idx + 8 + (first - 1) * 4) : 0, hi = be32(p.idx + 8 + first * 4);
  if (hi > p.count || lo > hi) return std::nullopt;
  const unsigned char* ids = p.idx + 8 + 1024;
  while (lo < hi) {
    std::uint32_t mid = lo + (hi - lo) / 2;
    int cmp = std::memcmp(ids + std::size_t{mid} * kIdBytes, raw_id.data(), kIdBytes);
    if (cmp == 0) {
      const unsigned char* offsets = ids + std::size_t{p.count} * (kIdBytes + 4);
      std::uint32_t off = be32(offsets + std::size_t{mid} * 4);
      if (!(off & 0x80000000u)) return off;
      const unsigned char* large = offsets + std::size_t{p.count} * 4 + std::size_t{off & 0x7fffffffu} * 8;
      if (large + 8 > p.idx + p.idx_size - 2 * kIdBytes) return std::nullopt;
      return (std::uint64_t{be32(large)} << 32) | be32(large + 4);
    }
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return std::nullopt;
}

std::optional<GitObject> ObjectReader::read_packed(Pack& p, std::uint64_t offset, int depth) {
  std::string_view pack(reinterpret_cast<const char*>(p.pack), p.pack_size - kIdBytes);
  if (depth > kMaxDeltaDepth || offset < 12 || offset >= pack.size()) return std::nullopt;
  auto h = read_entry_header(pack, static_cast<std::size_t>(offset));
  if (!h || h->size > max_object_) return std::nullopt;
  std::size_t used = 0;
  auto data = inflate_exact(pack.substr(h->data), static_cast<std::size_t>(h->size), used);
  if (!data) return std::nullopt;
  if (h->type >= 1 && h->type <= 4) return GitObject{static_cast<ObjectType>(h->type), std::move(*data)};
  std::optional<GitObject> base;
  if (h->type == kOfsDelta) {
    if (h->base_offset == 0 || h->base_offset > offset) return std::nullopt;
    base = read_packed(p, offset - h->base_offset, depth + 1);
  } else {
    for (auto& other : packs_)
      if (auto at = find(*other, h->base_id)) {
        base = read_packed(*other, *at, depth + 1);
        break;
      }
    if (!base) base = read_loose(h->base_id);
  }
  if (!base) return std::nullopt;
  auto result = apply_delta(base->data, *data, max_object_);
  if (!result) return std::nullopt;
  return GitObject{base->type, std::move(*result)};
}

std::optional<GitObject> ObjectReader::read_loose(std::string_view raw_id) {
  std::string hex = protocol::channel::id_to_hex(raw_id);
  std::string path = git_dir_ + "/objects/" + hex.substr(0, 2) + "/" + hex.substr(2);
  std::size_t size = 0;
  const unsigned char* mapped = map_file(path, size);
  if (!mapped) return std::nullopt;
  std::string out;
  z_stream z{};
  bool ok = inflateInit(&z) == Z_OK;
  if (ok) {
    z.next_in = const_cast<Bytef*>(mapped);
    z.avail_in = static_cast<uInt>(std::min<std::size_t>(size, UINT32_MAX));
    char buf[64u << 10];
    int rc = Z_OK;
    while (rc == Z_OK && out.size() <= max_object_ + 64) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      out.append(buf, sizeof buf - z.avail_out);
      if (rc == Z_BUF_ERROR) break;
    }
    ok = rc == Z_STREAM_END;
    inflateEnd(&z);
  }
  ::munmap(const_cast<unsigned char*>(mapped), size);
  if (!ok) return std::nullopt;
  std::size_t nul = out.find('\0');
  std::size_t space = out.find(' ');
  if (nul == std::string::npos || space == std::string::npos || space > nul) return std::nullopt;
  std::string type = out.substr(0, space);
  GitObject o;
  if (type == "blob") o.type = ObjectType::kBlob;
  else if (type == "tree") o.type = ObjectType::kTree;
  else if (type == "commit") o.type = ObjectType::kCommit;
  else if (type == "tag") o.type = ObjectType::kTag;
  else return std::nullopt;
  if (out.substr(space + 1, nul - space - 1) != std::to_string(out.size() - nul - 1)) return std::nullopt;
  o.data = out.substr(nul + 1);
  return o;
}

std::optional<GitObject> ObjectReader::read(std::string_view raw_id) {
  if (raw_id.size() != kIdBytes) return std::nullopt;
  open_packs();
  for (auto& p : packs_)
    if (auto at = find(*p, raw_id)) return read_packed(*p, *at, 0);
  return read_loose(raw_id);
}

bool ObjectReader::has(std::string_view raw_id) {
  if (raw_id.size() != kIdBytes) return false;
  open_packs();
  for (auto& p : packs_)
    if (find(*p, raw_id)) return true;
  std::string hex = protocol::channel::id_to_hex(raw_id);
  struct stat st{};
  return ::stat((git_dir_ + "/objects/" + hex.substr(0, 2) + "/" + hex.substr(2)).c_str(), &st) == 0;
}

}  // namespace lockroom::agent
