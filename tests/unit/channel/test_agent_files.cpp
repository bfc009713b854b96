// Files end to end: inline read/write/stat/list and streamed download/upload against the real agent.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/channel/channel_harness.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
namespace fs = std::filesystem;

using lockroom::channel::AgentClient;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "lockroom-channel-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

template <typename T>
Result<T> wait_for(AgentHarness& h, std::function<void(AgentClient::Done<T>)> call) {
  std::optional<Result<T>> got;
  call([&](Result<T> r) { got.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return got.has_value(); }));
  return std::move(*got);
}

}  // namespace

TEST_CASE("agent files: write, read back, stat and list", "[channel][e2e][files]") {
  TempDir dir;
  AgentHarness h;
  std::string path = (dir.path / "sub" / "notes.txt").string();
  std::string content = std::string("line one\n") + std::string("\0\xff binary", 9);

  wire::FileWriteParams w;
  w.path = path;
  w.data = content;
  w.mode = 0600;
  w.mkdirs = true;
  auto written = wait_for<wire::FileWriteResult>(h, [&](auto done) { h.client->write_file(w, done); });
  REQUIRE(written);
  CHECK(written->written == static_cast<std::int64_t>(content.size()));
  CHECK((fs::status(path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));

  wire::FileReadParams r;
  r.path = path;
  auto read = wait_for<wire::FileReadResult>(h, [&](auto done) { h.client->read_file(r, done); });
  REQUIRE(read);
  CHECK(read->data == content);
  CHECK(read->eof);
  CHECK(read->size == static_cast<std::int64_t>(content.size()));

  r.offset = 5;
  r.length = 3;
  auto part = wait_for<wire::FileReadResult>(h, [&](auto done) { h.client->read_file(r, done); });
  REQUIRE(part);
  CHECK(part->data == "one");
  CHECK_FALSE(part->eof);

  auto st = wait_for<wire::FileStat>(h, [&](auto done) { h.client->stat(path, false, done); });
  REQUIRE(st);
  CHECK(st->type == "file");
  CHECK(st->mode == 0600);
  CHECK(st->size == static_cast<std::int64_t>(content.size()));

  fs::create_symlink("notes.txt", dir.path / "sub" / "link");
  auto link = wait_for<wire::FileStat>(h, [&](auto done) { h.client->stat((dir.path / "sub" / "link").string(), false, done); });
  REQUIRE(link);
  CHECK(link->type == "symlink");
  CHECK(link->target == "notes.txt");

  auto listed = wait_for<wire::FileListResult>(h, [&](auto done) { h.client->list((dir.path / "sub").string(), 100, done); });
  REQUIRE(listed);
  REQUIRE(listed->entries.size() == 2);
  CHECK(listed->entries[0].name == "link");
  CHECK(listed->entries[1].name == "notes.txt");
  CHECK(listed->entries[1].type == "file");
  CHECK_FALSE(listed->truncated);

  for (int i = 0; i < 5; ++i) std::ofstream(dir.path / ("f" + std::to_string(i)));
  auto truncated = wait_for<wire::FileListResult>(h, [&](auto done) { h.client->list(dir.path.string(), 3, done); });
  REQUIRE(truncated);
  CHECK(truncated->entries.size() == 3);
  CHECK(truncated->truncated);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent files: errors name the path and the reason", "[channel][e2e][files]") {
  TempDir dir;
  AgentHarness h;
  auto missing = wait_for<wire::FileStat>(h, [&](auto done) { h.client->stat((dir.path / "nope").string(), false, done); });
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK_THAT(missing.error().message, Catch::Contains("file.stat: " + (dir.path / "nope").string() + ": No such file or directory"));

  wire::FileReadParams r;
  r.path = dir.path.string();
  auto is_dir = wait_for<wire::FileReadResult>(h, [&](auto done) { h.client->read_file(r, done); });
  REQUIRE_FALSE(is_dir);
  CHECK_THAT(is_dir.error().message, Catch::Contains("is a directory"));

  std::string fifo = (dir.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  r.path = fifo;
  auto not_regular = wait_for<wire::FileReadResult>(h, [&](auto done) { h.client->read_file(r, done); });
  REQUIRE_FALSE(not_regular);
  CHECK_THAT(not_regular.error().message, Catch::Contains("is not a regular file (other)"));

  wire::FileWriteParams big;
  big.path = (dir.path / "big").string();
  big.data = std::string(wire::kMaxInlineFile + 1, 'b');
  auto too_big = wait_for<wire::FileWriteResult>(h, [&](auto done) { h.client->write_file(big, done); });
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().code == ErrorCode::kLimitExceeded);
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent files: large files travel through streams both ways", "[channel][e2e][files]") {
  TempDir dir;
  AgentHarness h;
  std::string content;
  content.reserve(3u << 20);
  for (std::size_t i = 0; content.size() < (3u << 20); ++i) content += "block " + std::to_string(i) + "\n";
  std::string path = (dir.path / "big.bin").string();

  auto uploaded = wait_for<std::int64_t>(h, [&](auto done) { h.client->upload(path, content, 0644, done); });
  REQUIRE(uploaded);
  CHECK(*uploaded == static_cast<std::int64_t>(content.size()));
  CHECK(fs::file_size(path) == content.size());

  std::string back;
  auto downloaded = wait_for<std::int64_t>(h, [&](auto done) { h.client->download(path, [&](std::string_view b) { back.append(b); }, done); });
  REQUIRE(downloaded);
  CHECK(*downloaded == static_cast<std::int64_t>(content.size()));
  CHECK(back == content);

  auto failed = wait_for<std::int64_t>(h, [&](auto done) { h.client->download((dir.path / "absent").string(), nullptr, done); });
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == ErrorCode::kNotFound);
  CHECK(h.shutdown() == 0);
}
