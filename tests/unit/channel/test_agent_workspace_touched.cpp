// Files come and gone since the last manifest, end to end through the real lockroom-agent: when
// the watch saw only files written, created, deleted or renamed, the agent asks git only which
// come files it ignores (`git check-ignore`), never lists the tree again (`git ls-files`), and
// answers what a whole listing would. A file come inside a nested repository still means a whole
// listing. The agent's git runs are seen through a logging `git` first on its PATH. Also
// check-ignore fed and read through pipes with more than either holds.
#include <cstdlib>

#include "guest/workspace_ignore.h"
#include "tests/unit/channel/agent_workspace_world.h"

using namespace lockroom;
using namespace lockroom::testing;

namespace {

// A `git` that notes its arguments in `log` and runs the real one; the agent spawned while it
// lives finds it first on its PATH.
struct LoggingGit {
  TempDir dir;
  fs::path log = dir.path / "git.log";
  std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  LoggingGit() {
    std::string real = sh("command -v git");
    write(dir.path / "bin" / "git", "#!/bin/sh\necho \"$*\" >> '" + log.string() + "'\nexec '" + real + "' \"$@\"\n");
    fs::permissions(dir.path / "bin" / "git", fs::perms::owner_all);
    ::setenv("PATH", ((dir.path / "bin").string() + ":" + saved_path).c_str(), 1);
  }
  void restore_path() { ::setenv("PATH", saved_path.c_str(), 1); }
  ~LoggingGit() { restore_path(); }
  // The log so far, emptied.
  std::string take() {
    std::string text = fs::exists(log) ? slurp(log) : "";
    fs::remove(log);
    return text;
  }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("agent workspace: files come and gone are listed as git would, git asked only about the new ones", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);  // .gitignore: *.log, build/
  LoggingGit git;
  AgentHarness h;
  git.restore_path();  // the agent has it; this process's own git runs are not logged
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  fs::create_directories(w.ws / "build");
  sh("git init -q " + w.q(w.ws / "nested"));  // a repository of its own: git lists "nested/" alone
  auto m1 = manifest(h, w);
  REQUIRE(m1);
  git.take();

  write(w.ws / "new.txt", "new\n");
  write(w.ws / "debug.log", "ignored by *.log\n");
  write(w.ws / "build" / "out.o", "ignored with its folder\n");
  write(w.ws / "dir" / "c.txt", "charlie\n");
  fs::rename(w.ws / "dir" / "b.txt", w.ws / "dir" / "moved.txt");
  write(w.ws / "brief.txt", "here and gone\n");
  fs::remove(w.ws / "brief.txt");
  fs::remove(w.ws / "a.txt");  // tracked, deleted
  auto m2 = manifest_since(h, w, m1->summary.manifest);
  REQUIRE(m2);
  REQUIRE(m2->summary.since == m1->summary.manifest);
  std::string asked = git.take();
  INFO("git runs: " << asked);
  CHECK(has(asked, "check-ignore"));
  CHECK_FALSE(has(asked, "ls-files"));
  std::vector<std::string> records;
  for (const auto& e : m2->entries) records.push_back(e.path + (e.mode == wire::kModeRemoved ? " (removed)" : ""));
  CHECK(records == std::vector<std::string>{"a.txt (removed)", "dir/b.txt (removed)", "dir/c.txt", "dir/moved.txt", "new.txt"});
  CHECK(find(*m2, "new.txt")->id == w.hash_object("new.txt"));
  CHECK(find(*m2, "dir/moved.txt")->id == w.hash_object("dir/moved.txt"));
  // What a whole listing (git's own) says.
  auto whole = manifest_since(h, w, 999999);
  REQUIRE(whole);
  CHECK_FALSE(whole->summary.since);
  CHECK(same(patched(*m1, *m2), by_path(*whole)));
  git.take();

  // The tracked file comes back: listed whatever the ignore rules say of it.
  write(w.ws / "a.txt", "alpha again\n");
  auto m3 = manifest_since(h, w, whole->summary.manifest);
  REQUIRE(m3);
  REQUIRE(m3->entries.size() == 1);
  CHECK(m3->entries[0].path == "a.txt");
  CHECK(m3->entries[0].id == w.hash_object("a.txt"));
  CHECK_FALSE(has(git.take(), "ls-files"));

  // A file come inside the nested repository: only a whole listing tells (git lists the folder).
  write(w.ws / "nested" / "inner.txt", "inner\n");
  auto m4 = manifest_since(h, w, m3->summary.manifest);
  REQUIRE(m4);
  CHECK(has(git.take(), "ls-files"));
  INFO("records: " << m4->entries.size());
  CHECK(m4->entries.empty());
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: git check-ignore's answer is read as git means it", "[channel][workspace]") {
  using std::string_literals::operator""s;
  auto parsed = agent::parse_check_ignore(".gitignore\0" "2\0" "*.o\0" "a.o\0"
                                          ".gitignore\0" "3\0" "!keep.o\0" "keep.o\0"
                                          "\0\0\0" "new.c\0"
                                          ".gitignore\0" "1\0" "build/\0" "build/x c\0"s);
  REQUIRE(parsed);
  CHECK(*parsed == std::set<std::string>{"a.o", "build/x c"});
  CHECK_FALSE(agent::parse_check_ignore("a\0b\0c\0"s));          // not four fields a path
  CHECK_FALSE(agent::parse_check_ignore("a\0b\0c\0d"s));         // the last field unterminated
  CHECK(agent::parse_check_ignore("")->empty());
}

TEST_CASE("agent workspace: ignored_paths feeds git more than a pipe holds and reads all of its answer", "[channel][workspace]") {
  World w;
  seed(w);  // .gitignore: *.log, build/
  std::vector<std::string> paths;
  for (int i = 0; i < 20000; ++i) paths.push_back("folder " + std::to_string(i % 50) + "/file " + std::to_string(i) + (i % 2 ? ".log" : ".txt"));
  paths.push_back("build/out.o");
  auto ignored = agent::ignored_paths(w.src.string(), paths);  // ~700 KB in, ~1 MB out: both pipes fill
  REQUIRE(ignored);
  CHECK(ignored->size() == 10001);
  CHECK(ignored->count("folder 1/file 1.log"));
  CHECK_FALSE(ignored->count("folder 0/file 0.txt"));
  CHECK(ignored->count("build/out.o"));
}
