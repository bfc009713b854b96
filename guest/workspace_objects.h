// Git objects read and packs indexed by the agent itself, so a small sync starts no git process.
//
// index_pack() reads a whole pack held in memory (version 2 or 3; whole objects and deltas
// against objects earlier in the same pack), checks its trailing SHA-1, and returns every
// object's id plus the pack's `.idx` (version 2) bytes, as `git index-pack` would write them. A
// delta whose base is not in the pack (a thin pack) or anything else it does not understand is an
// error: the caller then runs git. ObjectReader reads objects from a repository's loose objects
// and packs (through their .idx files, mapped read-only). apply_delta() and parse_tree() are the
// pure pieces both use. The host is trusted for what it sends; the guest's own repository may hold
// anything, so every read is bounded and a malformed object is "not found". Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::agent {

enum class ObjectType { kCommit = 1, kTree = 2, kBlob = 3, kTag = 4 };

struct GitObject {
  ObjectType type = ObjectType::kBlob;
  std::string data;
};

// The id (20 raw bytes) of an object: SHA-1 of "<type> <size>\0<data>".
std::string object_id(ObjectType type, std::string_view data);

// `delta` applied to `base`; nullopt when the delta is malformed or its result larger than `max`.
std::optional<std::string> apply_delta(std::string_view base, std::string_view delta, std::size_t max);

struct TreeEntry {
  std::uint32_t mode = 0;  // 0100644, 0100755, 0120000, 040000, 0160000
  std::string name;
  std::string raw_id;      // 20 bytes
};
// A tree object's entries in stored order; nullopt when malformed.
std::optional<std::vector<TreeEntry>> parse_tree(std::string_view data);
// The tree id (20 raw bytes) a commit object names; nullopt when malformed.
std::optional<std::string> commit_tree(std::string_view data);

struct IndexedPack {
  std::vector<std::string> ids;  // raw, in pack order
  std::string idx;               // the .idx file (version 2)
  std::string checksum_hex;      // the pack's trailing SHA-1: its file name is pack-<this>.pack
};
// Indexes a pack held whole in memory; objects bigger than `max_object` are refused.
Result<IndexedPack> index_pack(std::string_view pack, std::size_t max_object = 64u << 20);

// Reads objects of the repository whose .git folder is `git_dir`.
class ObjectReader {
 public:
  explicit ObjectReader(std::string git_dir, std::size_t max_object = 64u << 20);
  ~ObjectReader();
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  std::optional<GitObject> read(std::string_view raw_id);
  bool has(std::string_view raw_id);

 private:
  struct Pack;
  std::optional<GitObject> read_loose(std::string_view raw_id);
  std::optional<GitObject> read_packed(Pack& pack, std::uint64_t offset, int depth);
  std::optional<std::uint64_t> find(Pack& pack, std::string_view raw_id) const;
  void open_packs();

  std::string git_dir_;
  std::size_t max_object_;
  bool packs_opened_ = false;
  std::vector<std::unique_ptr<Pack>> packs_;
};

}  // namespace lockroom::agent
