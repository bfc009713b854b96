// Manifest validation: per-entry refusals with reasons, whole-manifest bounds, the JSON reader.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "server/workspace/review/manifest.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;
using lockroom::ErrorCode;

namespace {

const std::string kGoodId = oid_hex(blob_id("hello\n"));

ManifestEntry good(std::string path) { return {std::move(path), kModeFile, kGoodId, 6}; }

std::string reason_for(const Manifest& m, const std::string& path) {
  for (const EntryRefusal& r : m.refused) {
    if (r.path == path) return r.reason;
  }
  return "";
}

bool accepted(const Manifest& m, const std::string& path) {
  for (const ManifestFile& f : m.files) {
    if (f.path == path) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a valid manifest is accepted, sorted by path, with parsed ids", "[manifest]") {
  auto m = validate_manifest({good("z.txt"), {"bin/run", kModeExecutable, kGoodId, 6}, {"link", kModeSymlink, kGoodId, 6},
                              good("a b/é.txt")});
  REQUIRE(m.ok());
  CHECK_FALSE(m->guest_misbehaved());
  REQUIRE(m->files.size() == 4);
  CHECK(m->files[0].path == "a b/é.txt");
  CHECK(m->files[1].path == "bin/run");
  CHECK(m->files[1].mode == kModeExecutable);
  CHECK(m->files[3].path == "z.txt");
  CHECK(oid_hex(m->files[0].id) == kGoodId);
  CHECK(m->total_bytes == 24);
}

TEST_CASE("hostile entries are refused one by one with a reason, and the rest is kept", "[manifest]") {
  std::vector<ManifestEntry> entries = {
      good("ok.txt"),
      good("../x"),
      good("/etc/passwd"),
      good(".git/hooks/pre-commit"),
      good(".GIT/config"),
      good("a/../../b"),
      good(std::string("nul\0byte", 8)),
      good("dup.txt"),
      good("dup.txt"),
      {"badid.txt", kModeFile, "not-a-hex-id", 6},
      {"shortid.txt", kModeFile, kGoodId.substr(0, 39), 6},
      {"fifo", 0010644, kGoodId, 0},
      {"device", 0020644, kGoodId, 0},
      {"submodule", 0160000, kGoodId, 0},
      {"dir", 0040000, kGoodId, 0},
      {"link", kModeSymlink, kGoodId, 4},
      good("link/passwd"),
      good("latin1-\xe9.txt"),
  };
  auto m = validate_manifest(entries);
  REQUIRE(m.ok());
  CHECK(m->guest_misbehaved());
  REQUIRE(m->files.size() == 1);
  CHECK(m->files[0].path == "ok.txt");
  CHECK_THAT(reason_for(*m, "../x"), Catch::Contains("'..'"));
  CHECK_THAT(reason_for(*m, "/etc/passwd"), Catch::Contains("absolute"));
  CHECK_THAT(reason_for(*m, ".git/hooks/pre-commit"), Catch::Contains("git's own directory"));
  CHECK_THAT(reason_for(*m, ".GIT/config"), Catch::Contains("git's own directory"));
  CHECK_THAT(reason_for(*m, "a/../../b"), Catch::Contains("'..'"));
  CHECK_THAT(reason_for(*m, "nul\\x00byte"), Catch::Contains("NUL"));
  CHECK_THAT(reason_for(*m, "dup.txt"), Catch::Contains("2 times"));
  CHECK_THAT(reason_for(*m, "badid.txt"), Catch::Contains("not a 40-digit hex"));
  CHECK_THAT(reason_for(*m, "shortid.txt"), Catch::Contains("not a 40-digit hex"));
  CHECK_THAT(reason_for(*m, "fifo"), Catch::Contains("mode 010644"));
  CHECK_THAT(reason_for(*m, "device"), Catch::Contains("mode 020644"));
  CHECK_THAT(reason_for(*m, "submodule"), Catch::Contains("submodules are not accepted"));
  CHECK_THAT(reason_for(*m, "dir"), Catch::Contains("mode 040000"));
  CHECK_THAT(reason_for(*m, "link"), Catch::Contains("also as a directory"));
  CHECK_THAT(reason_for(*m, "link/passwd"), Catch::Contains("inside 'link'"));
  CHECK_THAT(reason_for(*m, "latin1-\\xe9.txt"), Catch::Contains("UTF-8"));
  CHECK(m->refused.size() == entries.size() - 1);
}

TEST_CASE("a file over the single-blob limit is refused by name", "[manifest]") {
  auto m = validate_manifest({good("small"), {"huge.iso", kModeFile, kGoodId, (std::uint64_t(64) << 20) + 1}});
  REQUIRE(m.ok());
  CHECK(accepted(*m, "small"));
  CHECK_THAT(reason_for(*m, "huge.iso"), Catch::Contains("67108865 bytes") && Catch::Contains("limit"));
}

TEST_CASE("a huge total claimed size fails the manifest and names the largest files", "[manifest]") {
  ManifestLimits limits;
  limits.max_total_bytes = 1000;
  std::vector<ManifestEntry> entries;
  for (int i = 0; i < 10; ++i) entries.push_back({"f" + std::to_string(i), kModeFile, kGoodId, std::uint64_t(100 + i)});
  auto m = validate_manifest(entries, limits);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(m.error().message, Catch::Contains("1045 bytes") && Catch::Contains("f9 (109 bytes)") &&
                                    Catch::Contains("f8 (108 bytes)") && Catch::Contains("f7 (107 bytes)"));
}

TEST_CASE("too many entries fail the manifest before any per-entry work", "[manifest]") {
  ManifestLimits limits;
  limits.max_entries = 3;
  auto m = validate_manifest({good("a"), good("b"), good("c"), good("d")}, limits);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(m.error().message, Catch::Contains("more than 3 entries"));
}

TEST_CASE("manifest JSON: entries, string or numeric modes, per-entry structural refusals", "[manifest]") {
  std::string json = R"([
    {"path": "a.txt", "mode": "100644", "id": ")" + kGoodId + R"(", "size": 6, "extra": [1, {"x": 2}]},
    {"path": "run.sh", "mode": 33261, "id": ")" + kGoodId + R"(", "size": 6},
    {"path": "nul\u0000name", "mode": "100644", "id": ")" + kGoodId + R"(", "size": 6},
    {"path": "nosize", "mode": "100644", "id": ")" + kGoodId + R"("},
    {"mode": "100644", "id": ")" + kGoodId + R"(", "size": 6},
    {"path": "badmode", "mode": "10x644", "id": ")" + kGoodId + R"(", "size": 6},
    {"path": "negative", "mode": "100644", "id": ")" + kGoodId + R"(", "size": -1},
    {"path": ["array"], "mode": "100644", "id": ")" + kGoodId + R"(", "size": 6},
    "just a string",
    [1, 2]
  ])";
  auto m = parse_manifest_json(json);
  REQUIRE(m.ok());
  REQUIRE(m->files.size() == 2);
  CHECK(m->files[0].path == "a.txt");
  CHECK(m->files[1].path == "run.sh");
  CHECK(m->files[1].mode == kModeExecutable);
  CHECK_THAT(reason_for(*m, "nul\\x00name"), Catch::Contains("NUL"));
  CHECK_THAT(reason_for(*m, "nosize"), Catch::Contains("no \"size\""));
  CHECK_THAT(reason_for(*m, "entry #4"), Catch::Contains("no \"path\""));
  CHECK_THAT(reason_for(*m, "badmode"), Catch::Contains("not an octal number"));
  CHECK_THAT(reason_for(*m, "negative"), Catch::Contains("negative"));
  CHECK_THAT(reason_for(*m, "entry #7"), Catch::Contains("\"path\" is an array"));
  CHECK_THAT(reason_for(*m, "entry #8"), Catch::Contains("not an object"));
  CHECK_THAT(reason_for(*m, "entry #9"), Catch::Contains("not an object"));
}

TEST_CASE("manifest JSON that is malformed or not an array fails as a whole", "[manifest]") {
  for (const char* bad : {"", "{", "{\"path\": \"a\"}", "42", "[{\"path\": \"a\"", "[\"\xff\"]"}) {
    INFO(bad);
    auto m = parse_manifest_json(bad);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().code == ErrorCode::kInvalidInput);
  }
}

TEST_CASE("a million tiny JSON entries are refused by the count bound while parsing", "[manifest]") {
  std::string json = "[";
  json.reserve(3'000'010);
  for (int i = 0; i < 1'000'000; ++i) json += "{},";
  json += "oops";  // malformed tail: reaching it would report a syntax error instead of the bound
  auto started = std::chrono::steady_clock::now();
  auto m = parse_manifest_json(json);
  auto elapsed = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(m.error().message, Catch::Contains("more than 200000 entries"));
  CHECK(elapsed < std::chrono::seconds(5));
}

TEST_CASE("bench: parse and validate a 200,000-entry manifest", "[.bench][manifest]") {
  std::string json = "[";
  for (int i = 0; i < 200'000; ++i) {
    json += (i ? "," : "");
    json += R"({"path":"dir)" + std::to_string(i % 500) + "/sub/file" + std::to_string(i) + R"(.txt","mode":"100644","id":")" +
            kGoodId + R"(","size":6})";
  }
  json += "]";
  auto started = std::chrono::steady_clock::now();
  auto m = parse_manifest_json(json);
  auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(m.ok());
  CHECK(m->files.size() == 200'000);
  std::printf("manifest of 200000 entries (%zu bytes of JSON): parsed and validated in %.0f ms\n", json.size(), elapsed);
}

TEST_CASE("an entry with an empty path is refused under its number, not an empty name", "[manifest]") {
  auto m = validate_manifest({good("a.txt"), good(""), good("b.txt")});
  REQUIRE(m);
  CHECK(m->files.size() == 2);
  REQUIRE(m->refused.size() == 1);
  CHECK(m->refused[0].path == "entry #1");
  CHECK_THAT(m->refused[0].reason, Catch::Contains("empty"));
}
