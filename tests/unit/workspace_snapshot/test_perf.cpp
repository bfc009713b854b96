// Snapshot timings on a tree of a few thousand files (hidden: run with
// `lockroom-workspace_snapshot-tests "[.perf]"`). The tree is generated (source-like text files
// in nested directories, committed to a real repository), or copied from the directory named by
// $LOCKROOM_SNAPSHOT_PERF_SOURCE. Prints files, bytes and milliseconds per step.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include <sys/resource.h>

#include "server/workspace/snapshot/transfer.h"
#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;
using namespace lockroom::workspace::snapshot;

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// CPU time (user + system) this process has used, in ms: on a shared machine wall-clock time
// mostly measures the neighbours.
double cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

void generate_tree(const std::string& root, int files) {
  std::string line = "static inline int function_with_a_long_name(int argument) { return argument * 31 + 7; }\n";
  for (int i = 0; i < files; ++i) {
    const std::string dir = "d" + std::to_string(i % 17) + "/s" + std::to_string(i % 5);
    std::string content = "// file " + std::to_string(i) + "\n";
    for (int l = 0; l < 20 + (i * 7) % 200; ++l) content += line;
    write_file(root + "/" + dir + "/f" + std::to_string(i) + ".h", content);
  }
}

void fill(const std::string& dir) {
  if (const char* source = std::getenv("LOCKROOM_SNAPSHOT_PERF_SOURCE")) {
    fs::copy(source, dir + "/src", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  } else {
    generate_tree(dir, 3000);
  }
}

}  // namespace

TEST_CASE("snapshot timings on a few thousand files", "[.perf]") {
  TempDir ws, store, plain, plain_store;
  TestRepo repo(ws.path());
  fill(ws.path());
  repo.commit_all();
  age_files(ws.path());
  fill(plain.path());  // the same files outside any repository: every path asks the ignore rules
  age_files(plain.path());

  auto t = std::chrono::steady_clock::now();
  double c = cpu_ms();
  auto first = snap(ws.path(), store.path());
  const double first_ms = ms_since(t), first_cpu = cpu_ms() - c;
  t = std::chrono::steady_clock::now();
  c = cpu_ms();
  auto second = snap(ws.path(), store.path());
  const double second_ms = ms_since(t), second_cpu = cpu_ms() - c;

  std::vector<std::string> edited;
  for (const auto& e : fs::recursive_directory_iterator(ws.path())) {
    if (edited.size() == 3) break;
    if (e.is_regular_file() && e.path().string().find("/.git/") == std::string::npos) edited.push_back(e.path());
  }
  for (const auto& path : edited) write_file(path, read_file(path) + "// edited\n");
  t = std::chrono::steady_clock::now();
  c = cpu_ms();
  auto third = snap(ws.path(), store.path());
  const double third_ms = ms_since(t), third_cpu = cpu_ms() - c;

  git_repository* raw = nullptr;
  REQUIRE(git_repository_open_bare(&raw, store.path().c_str()) == 0);
  RepoPtr store_repo(raw);
  git_oid c1, c3;
  git_oid_fromstr(&c1, first.commit_id.c_str());
  git_oid_fromstr(&c3, third.commit_id.c_str());
  t = std::chrono::steady_clock::now();
  c = cpu_ms();
  auto all = objects_to_send(store_repo.get(), c1, {});
  REQUIRE(all.ok());
  PackInfo full_pack;
  auto full = write_pack(store_repo.get(), *all, [](std::string_view) -> lockroom::Result<void> { return {}; });
  REQUIRE(full.ok());
  const double full_pack_ms = ms_since(t), full_pack_cpu = cpu_ms() - c;
  t = std::chrono::steady_clock::now();
  c = cpu_ms();
  auto delta = objects_to_send(store_repo.get(), c3, OidSet(all->begin(), all->end()));
  REQUIRE(delta.ok());
  auto small = write_pack(store_repo.get(), *delta, [](std::string_view) -> lockroom::Result<void> { return {}; });
  REQUIRE(small.ok());
  const double delta_pack_ms = ms_since(t), delta_pack_cpu = cpu_ms() - c;

  t = std::chrono::steady_clock::now();
  c = cpu_ms();
  auto outside = snap(plain.path(), plain_store.path());
  const double outside_ms = ms_since(t), outside_cpu = cpu_ms() - c;
  t = std::chrono::steady_clock::now();
  c = cpu_ms();
  auto outside_again = snap(plain.path(), plain_store.path());
  const double outside_again_ms = ms_since(t), outside_again_cpu = cpu_ms() - c;

  std::printf("files %llu, %s\n", static_cast<unsigned long long>(first.file_count),
              human_bytes(first.total_bytes).c_str());
  std::printf("first snapshot   %7.1f ms, cpu %6.1f ms (scan %llu, store %llu), files read %llu\n", first_ms, first_cpu,
              static_cast<unsigned long long>(first.timings.scan_ms),
              static_cast<unsigned long long>(first.timings.store_ms),
              static_cast<unsigned long long>(first.files_read));
  std::printf("second, no edits %7.1f ms, cpu %6.1f ms (scan %llu, store %llu), files read %llu\n", second_ms, second_cpu,
              static_cast<unsigned long long>(second.timings.scan_ms),
              static_cast<unsigned long long>(second.timings.store_ms),
              static_cast<unsigned long long>(second.files_read));
  std::printf("third, 3 edits   %7.1f ms, cpu %6.1f ms (scan %llu, store %llu), files read %llu\n", third_ms, third_cpu,
              static_cast<unsigned long long>(third.timings.scan_ms),
              static_cast<unsigned long long>(third.timings.store_ms),
              static_cast<unsigned long long>(third.files_read));
  std::printf("full pack        %7.1f ms, cpu %6.1f ms, %zu objects, %s\n", full_pack_ms, full_pack_cpu, all->size(),
              human_bytes(full->bytes).c_str());
  std::printf("incremental pack %7.1f ms, cpu %6.1f ms, %zu objects, %s\n", delta_pack_ms, delta_pack_cpu, delta->size(),
              human_bytes(small->bytes).c_str());
  std::printf("not a repository: first %7.1f ms, cpu %6.1f ms (scan %llu); second %6.1f ms, cpu %6.1f ms (scan %llu)\n",
              outside_ms, outside_cpu, static_cast<unsigned long long>(outside.timings.scan_ms), outside_again_ms,
              outside_again_cpu, static_cast<unsigned long long>(outside_again.timings.scan_ms));
  CHECK(outside.tree_id == first.tree_id);
  CHECK(second.commit_id == first.commit_id);
  CHECK(second.files_read == 0);
  CHECK(third.files_read == 3);
}
