// keep_base_versions: a refused entry keeps the snapshot's version of its path, so the review
// never reads a refusal as a deletion; refused_paths lists exactly the refused entries whose names
// are acceptable.
#include <catch2/catch.hpp>

#include "server/workspace/review/blob_store.h"
#include "server/workspace/review/changes.h"
#include "server/workspace/review/keep_base.h"
#include "server/workspace/review/manifest_patch.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;

namespace {

const Files kBase = {{"big.iso", "small enough\n"},
                     {"run.sh", "#!/bin/sh\n", kModeExecutable},
                     {"link", "big.iso", kModeSymlink},
                     {"src/a.c", "int a;\n"},
                     {"src/b.c", "int b;\n"}};

std::vector<std::string> paths_of(const Manifest& m) {
  std::vector<std::string> out;
  for (const auto& f : m.files) out.push_back(f.path);
  return out;
}

}  // namespace

TEST_CASE("refused_paths: the refused entries with acceptable names, sorted and once each", "[keep_base][manifest]") {
  auto entries = manifest_entries({{"ok.txt", "ok\n"}});
  entries.push_back({"big.iso", kModeFile, std::string(40, '0'), std::uint64_t(1) << 40});  // over the limit
  entries.push_back({"dev", 0020644, oid_hex(blob_id("x")), 1});                           // a device
  entries.push_back({"dup", kModeFile, oid_hex(blob_id("x")), 1});
  entries.push_back({"dup", kModeFile, oid_hex(blob_id("y")), 1});
  entries.push_back({"../escape", kModeFile, oid_hex(blob_id("x")), 1});  // a bad name: nothing to keep
  entries.push_back({".git/config", kModeFile, oid_hex(blob_id("x")), 1});
  auto m = validate_manifest(entries);
  REQUIRE(m.ok());
  CHECK(m->refused.size() == 6);
  CHECK(m->refused_paths == std::vector<std::string>{"big.iso", "dev", "dup"});
}

TEST_CASE("keep_base_versions puts the snapshot's version back where an entry was refused", "[keep_base]") {
  TempDir dir;
  auto repo = init_repo(dir / "store.git", true);
  git_oid base = tree_of(repo.get(), kBase);

  // The guest: big.iso grew past the limit, run.sh became a device, link is listed twice, src/a.c
  // was edited, src/b.c deleted, new.txt added; one more refused entry the base does not hold.
  const Files guest_files = {{"src/a.c", "int a = 1;\n"}, {"new.txt", "new\n"}};
  for (const auto& f : guest_files) REQUIRE(store_blob(repo.get(), blob_id(f.content), f.content, f.path).ok());
  auto entries = manifest_entries(guest_files);
  entries.push_back({"big.iso", kModeFile, std::string(40, '0'), std::uint64_t(1) << 40});
  entries.push_back({"run.sh", 0020755, oid_hex(blob_id("#!/bin/sh\n")), 10});
  entries.push_back({"link", kModeSymlink, oid_hex(blob_id("a")), 1});
  entries.push_back({"link", kModeSymlink, oid_hex(blob_id("b")), 1});
  entries.push_back({"not-in-base", 0060644, oid_hex(blob_id("x")), 1});
  auto m = validate_manifest(entries);
  REQUIRE(m.ok());
  REQUIRE(m->refused.size() == 5);

  auto kept = keep_base_versions(repo.get(), base, *m);
  REQUIRE(kept.ok());
  CHECK(*kept == 3);
  CHECK(paths_of(*m) == std::vector<std::string>{"big.iso", "link", "new.txt", "run.sh", "src/a.c"});
  for (const auto& f : m->files)
    if (f.path == "big.iso") CHECK(f.size == 13);

  // Diffed against the base: only what the guest really changed; nothing refused reads as deleted.
  auto tree = build_result_tree(repo.get(), *m);
  REQUIRE(tree.ok());
  auto changes = Changes::compute(repo.get(), base, *tree);
  REQUIRE(changes.ok());
  std::vector<std::string> changed;
  for (const auto& c : changes->list()) changed.push_back(std::string(status_name(c.status)) + " " + c.path);
  CHECK(changed == std::vector<std::string>{"added new.txt", "modified src/a.c", "deleted src/b.c"});
}

TEST_CASE("keep_base_versions leaves out a base version that would clash with an accepted entry", "[keep_base]") {
  TempDir dir;
  auto repo = init_repo(dir / "store.git", true);
  git_oid base = tree_of(repo.get(), kBase);

  // The last view: the guest had made big.iso a folder. Now a partial manifest lists big.iso as a
  // device and run.sh as one too: both refused. run.sh's base version comes back; big.iso's
  // cannot, as big.iso/inner.txt is still there.
  Files guest = with(kBase, {{"big.iso", "", 0}});
  guest.push_back({"big.iso/inner.txt", "inner\n"});
  auto previous = validate_manifest(manifest_entries(guest));
  REQUIRE(previous.ok());
  std::vector<ManifestEntry> changes = {{"big.iso", 0020644, oid_hex(blob_id("x")), 1}, {"run.sh", 0020755, oid_hex(blob_id("y")), 1}};
  auto m = apply_partial_manifest(*previous, changes);
  REQUIRE(m.ok());
  CHECK(m->refused_paths == std::vector<std::string>{"big.iso", "run.sh"});
  auto kept = keep_base_versions(repo.get(), base, *m);
  REQUIRE(kept.ok());
  CHECK(*kept == 1);
  CHECK(paths_of(*m) == std::vector<std::string>{"big.iso/inner.txt", "link", "run.sh", "src/a.c", "src/b.c"});
}
