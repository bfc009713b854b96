// `lockroom run`'s review menu on a terminal: each choice (apply all, file by file with y/n/q,
// branch, patch, discard), a failed choice going back to the menu with the changes saved, and
// the end of input. Answers come through a pipe, and, for the bug where the menu did not wait,
// through a real pty whose slave libuv has left non-blocking, as `lockroom run`'s stdin is when
// the command ends. FdFlags, which puts the terminal back, is checked on the same pty.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <streambuf>
#include <thread>

#include <uv.h>

#include <catch2/catch.hpp>

#include "server/cli/fd_flags.h"
#include "tests/unit/cli/review_world.h"

using namespace lockroom::cli;
using namespace lockroom::cli::testing;
using lockroom::testing::read_file;
using lockroom::testing::sh;
using Mode = ReviewChoice::Mode;

namespace {

constexpr const char* kMenu = "[a]pply all / [r]eview file by file / save as [b]ranch / save a [p]atch / [d]iscard: ";

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Runs the menu with `answers` typed on a pipe that then ends.
int menu_with(ReviewWorld& w, const std::string& answers) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], answers.data(), answers.size()) == static_cast<ssize_t>(answers.size()));
  ::close(fds[1]);
  int status = review_changes(w.set, ReviewChoice{}, w.context(fds[0]));
  ::close(fds[0]);
  return status;
}

bool non_blocking(int fd) { return (::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0; }

// What `lockroom run` does to its stdin when it is a terminal: a libuv tty handle on it, closed
// again. libuv reopens the tty, puts it over `fd` and makes it non-blocking, and leaves it so
// (it closes descriptors above 2 with the handle: use it on stdin, see AsStdin).
void open_and_close_with_libuv(int fd) {
  uv_loop_t loop;
  REQUIRE(uv_loop_init(&loop) == 0);
  uv_tty_t tty;
  REQUIRE(uv_tty_init(&loop, &tty, fd, 1) == 0);
  uv_close(reinterpret_cast<uv_handle_t*>(&tty), nullptr);
  uv_run(&loop, UV_RUN_DEFAULT);
  REQUIRE(uv_loop_close(&loop) == 0);
}

// An ostream another thread may read while the review writes it.
class SharedText : public std::streambuf {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

// Puts `fd` at stdin (0) for the life of the object, as `lockroom run`'s terminal is.
struct AsStdin {
  int saved = ::dup(STDIN_FILENO);
  explicit AsStdin(int fd) { REQUIRE(::dup2(fd, STDIN_FILENO) == STDIN_FILENO); }
  ~AsStdin() {
    if (saved >= 0) {
      ::dup2(saved, STDIN_FILENO);
      ::close(saved);
    } else {
      ::close(STDIN_FILENO);
    }
  }
};

// A pty: the review reads the slave, the test types on the master and reads what was echoed.
struct Pty {
  int master = -1, slave = -1;
  Pty() { REQUIRE(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0); }
  ~Pty() {
    if (master >= 0) ::close(master);
    ::close(slave);
  }
  void type(const std::string& text) { REQUIRE(::write(master, text.data(), text.size()) == static_cast<ssize_t>(text.size())); }
};

}  // namespace

TEST_CASE("menu: [a]pply all writes the changes", "[cli][review][menu]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  CHECK(menu_with(w, "a\n") == 0);
  INFO(w.printed());
  CHECK(contains(w.printed(), kMenu));
  CHECK(folder_files(w.host) == files_map(agent_files()));
  CHECK_FALSE(fs::exists(w.patches));
}

TEST_CASE("menu: unknown answers and empty lines ask again; answers are trimmed and case-blind", "[cli][review][menu]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  CHECK(menu_with(w, "x\n\n  A \r\n") == 0);
  INFO(w.printed());
  CHECK(count_of(w.printed(), kMenu) == 3);
  CHECK(folder_files(w.host) == files_map(agent_files()));
}

TEST_CASE("menu: [r]eview file by file applies the files answered yes and saves the others", "[cli][review][menu]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  // Files in path order: README.md, added.txt, café menu.txt, logo.bin, notes.txt, old.txt, tool.sh.
  CHECK(menu_with(w, "r\ny\nmaybe\nn\ny\nq\n") == 0);
  std::string out = w.printed();
  INFO(out);
  CHECK(contains(out, "-line 2\n+line 2 from the agent\n"));  // each file's patch is shown before its question
  CHECK(count_of(out, "apply added.txt? [y]es / [n]o / [q]uit: ") == 2);  // "maybe" is asked again
  CHECK(contains(out, "apply logo.bin?"));                                 // answered q: no more questions
  CHECK_FALSE(contains(out, "apply notes.txt?"));
  auto expected = files_map(base_files());
  expected["README.md"] = "# demo\nline 2 from the agent\nline 3\n";
  expected["caf\xc3\xa9 menu.txt"] = "quoted\n";
  CHECK(folder_files(w.host) == expected);
  CHECK(contains(out, "lockroom: applied 2 of 2 files to the workspace\n"));
  // The rest — declined or not reached — is in the patch, and nothing else.
  CHECK(contains(out, "lockroom: saved the 5 files you did not take in " + w.fallback_patch().string() + "\n"));
  std::string patch = read_file(w.fallback_patch());
  CHECK_FALSE(contains(patch, "README.md"));
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files());
  auto rest = files_map(agent_files());
  rest["README.md"] = "# demo\nline 2\nline 3\n";
  rest.erase("caf\xc3\xa9 menu.txt");
  CHECK(folder_files(copy) == rest);
}

TEST_CASE("menu: file by file, a taken file that conflicts and the declined ones end up in one patch", "[cli][review][menu]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  w.write_host("README.md", "# demo\nline 2 from the user\nline 3\n");  // the agent changed line 2 too
  CHECK(menu_with(w, "r\ny\nn\nn\nn\nn\nn\nn\n") == 1);
  std::string out = w.printed();
  INFO(out);
  CHECK(contains(out, "conflict: README.md"));
  CHECK(read_file(w.host / "README.md") == "# demo\nline 2 from the user\nline 3\n");  // left as the user had it
  CHECK(contains(out, "lockroom: saved the 7 files not applied or not taken in " + w.fallback_patch().string() + "\n"));
  // One patch with all of it: nothing the agent did is lost.
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files());
  CHECK(folder_files(copy) == files_map(agent_files()));
}

TEST_CASE("menu: save as [b]ranch names the branch after the sandbox", "[cli][review][menu]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  CHECK(menu_with(w, "b\n") == 0);
  INFO(w.printed());
  CHECK(contains(w.printed(), "lockroom: saved as lockroom/sb-test"));
  CHECK(sh("cd " + w.host.string() + " && git show lockroom/sb-test:added.txt") == "hello\n");
  CHECK(read_file(w.host / "README.md") == "# demo\nline 2\nline 3\n");
}

TEST_CASE("menu: a branch that cannot be made saves a patch and goes back to the menu", "[cli][review][menu]") {
  ReviewWorld w(base_files(), false);
  w.agent_made(agent_files());
  auto before = folder_files(w.host);
  CHECK(menu_with(w, "b\nd\n") == 0);
  std::string out = w.printed();
  INFO(out);
  CHECK(contains(out, "is not a git repository\n"));
  CHECK(contains(out, "lockroom: saved the changes in " + w.fallback_patch().string() + "\n"));
  CHECK(count_of(out, kMenu) == 2);
  CHECK(contains(out, "lockroom: changes discarded\n"));
  CHECK(folder_files(w.host) == before);
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files(), false);
  CHECK(folder_files(copy) == files_map(agent_files()));
}

TEST_CASE("menu: a [b]ranch on an uncommitted edit to the same lines is saved, the checkout untouched", "[cli][review][menu]") {
  ReviewWorld w;
  w.write_host("README.md", "# demo\nline 2 uncommitted\nline 3\n");
  w.agent_made(with(base_files(), {{"README.md", "# demo\nline 2 from the agent\nline 3\n"}}));
  CHECK(menu_with(w, "b\n") == 0);
  INFO(w.printed());
  CHECK(contains(w.printed(), "lockroom: saved as lockroom/"));
  CHECK(count_of(w.printed(), kMenu) == 1);
  CHECK(read_file(w.host / "README.md") == "# demo\nline 2 uncommitted\nline 3\n");
}

TEST_CASE("menu: save a [p]atch, and [d]iscard", "[cli][review][menu]") {
  SECTION("patch") {
    ReviewWorld w;
    w.agent_made(agent_files());
    CHECK(menu_with(w, "p\n") == 0);
    fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files());
    CHECK(folder_files(copy) == files_map(agent_files()));
  }
  SECTION("discard") {
    ReviewWorld w;
    w.agent_made(agent_files());
    auto before = folder_files(w.host);
    CHECK(menu_with(w, "d\n") == 0);
    CHECK(folder_files(w.host) == before);
    CHECK_FALSE(fs::exists(w.patches));
  }
}

TEST_CASE("menu: at the end of input nothing is applied and the changes are saved", "[cli][review][menu]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  auto before = folder_files(w.host);
  CHECK(menu_with(w, "") == 0);
  INFO(w.printed());
  CHECK(folder_files(w.host) == before);
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files());
  CHECK(folder_files(copy) == files_map(agent_files()));
}

TEST_CASE("menu on a terminal libuv left non-blocking waits for the answer", "[cli][review][menu][pty]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  Pty pty;
  AsStdin terminal_in(pty.slave);
  open_and_close_with_libuv(STDIN_FILENO);
  REQUIRE(non_blocking(STDIN_FILENO));  // the state `lockroom run` left its stdin in

  SharedText shown;
  std::ostream terminal(&shown);
  ReviewContext context = w.context(STDIN_FILENO);
  context.out = &terminal;
  std::atomic<bool> done{false};
  int status = -1;
  std::thread review([&] {
    status = review_changes(w.set, ReviewChoice{}, context);
    done = true;
  });
  // Once the menu is up it keeps waiting: no answer yet, and no end of input.
  for (int i = 0; i < 1000 && !done && !contains(shown.text(), kMenu); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  bool waited = !done;
  pty.type("a\n");
  for (int i = 0; i < 1000 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!done) {  // never typed into (it flushed the answer?): end its input so the test ends
    ::close(pty.master);
    pty.master = -1;
  }
  review.join();
  INFO(shown.text());
  CHECK(waited);
  CHECK(status == 0);
  CHECK(folder_files(w.host) == files_map(agent_files()));
}

TEST_CASE("read_answer waits on a non-blocking terminal, trims, and reports the end of input", "[cli][review][pty]") {
  Pty pty;
  REQUIRE(::fcntl(pty.slave, F_SETFL, ::fcntl(pty.slave, F_GETFL) | O_NONBLOCK) == 0);
  std::optional<std::string> first, second;
  std::thread reader([&] {
    first = read_answer(pty.slave);
    second = read_answer(pty.slave);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pty.type("  Yes \n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::close(pty.master);  // the terminal goes away: the slave reads EIO or end of file
  pty.master = -1;
  reader.join();
  CHECK(first == std::optional<std::string>("yes"));
  CHECK_FALSE(second);
}

TEST_CASE("FdFlags puts back the blocking terminal libuv left non-blocking", "[cli][pty]") {
  Pty pty;
  AsStdin terminal_in(pty.slave);
  REQUIRE_FALSE(non_blocking(STDIN_FILENO));
  FdFlags flags;
  flags.save({STDIN_FILENO});
  open_and_close_with_libuv(STDIN_FILENO);
  REQUIRE(non_blocking(STDIN_FILENO));
  flags.restore();
  CHECK_FALSE(non_blocking(STDIN_FILENO));
  // A blocking read now waits for a line, as std::getline on std::cin would.
  std::thread typist([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pty.type("b\n");
  });
  char line[8] = {};
  ssize_t n = ::read(STDIN_FILENO, line, sizeof line);
  typist.join();
  CHECK(std::string(line, n > 0 ? n : 0) == "b\n");
}
