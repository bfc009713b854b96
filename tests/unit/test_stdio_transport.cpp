// StdioTransport (server/rpc/stdio_transport.h) over real pipes, sockets and files on a real
// libuv loop. Every test ends with uv_loop_close() == 0: nothing was left open.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "server/rpc/stdio_transport.h"
#include "tests/unit/uv_test_util.h"

using lockroom::rpc::StdioTransport;
using namespace lockroom::testing;

namespace {

std::string pattern(std::size_t size, unsigned seed) {
  std::string out(size, '\0');
  std::minstd_rand rng(seed);
  for (auto& c : out) c = static_cast<char>('a' + rng() % 26);
  return out;
}

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// A temporary regular file with the given content; removed when destroyed.
struct TempFile {
  explicit TempFile(const std::string& content) {
    std::string name = (std::filesystem::temp_directory_path() / "lockroom-unit-XXXXXX").string();
    int fd = mkstemp(name.data());
    REQUIRE(fd >= 0);
    path = name;
    REQUIRE(write_all(fd, content));
    ::close(fd);
  }
  ~TempFile() { ::unlink(path.c_str()); }
  std::string read() const {
    std::string out;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
  }
  std::string path;
};

}  // namespace

TEST_CASE("stdio transport: data in arrives in order, then end of input once", "[transport]") {
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();
  const std::string sent = pattern(1 << 20, 1);

  auto transport = std::make_unique<StdioTransport>(loop.get(), in.read_end, out.write_end);
  PipeReader editor_side(loop.get(), out.read_end);
  std::string received;
  int eofs = 0, errors = 0, closed = 0;
  REQUIRE(transport->start({[&](std::string_view bytes) { received.append(bytes); },
                            [&] {
                              ++eofs;
                              transport->close([&] { ++closed; });
                            },
                            [&](const std::string&) { ++errors; }})
              .ok());
  // The editor writes in pieces of random sizes from another thread, then closes its end.
  std::thread editor([&] {
    std::minstd_rand rng(7);
    std::size_t done = 0;
    while (done < sent.size()) {
      std::size_t n = std::min<std::size_t>(sent.size() - done, 1 + rng() % 20000);
      write_all(in.write_end, sent.substr(done, n));
      done += n;
    }
    ::close(in.write_end);
  });
  loop.run();
  editor.join();
  CHECK_FALSE(loop.timed_out());
  CHECK(received.size() == sent.size());
  CHECK(received == sent);
  CHECK(eofs == 1);
  CHECK(errors == 0);
  CHECK(closed == 1);
  CHECK(editor_side.eof);  // closing the transport closed its stdout
  transport.reset();
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: 10,000 small writes are coalesced and all arrive in order", "[transport]") {
  TestLoop loop;
  FdPair in = make_socketpair();
  FdPair out = make_socketpair();
  StdioTransport transport(loop.get(), in.read_end, out.write_end);
  PipeReader editor_side(loop.get(), out.read_end);
  int errors = 0, closed = 0;
  REQUIRE(transport.start({[](std::string_view) {}, [] {}, [&](const std::string&) { ++errors; }}).ok());

  std::string expected;
  for (int i = 0; i < 10000; ++i) {
    std::string message = "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":" + std::to_string(i) + "}\n";
    transport.write(message);
    expected += message;
  }
  // Nothing has been written yet: it all waits for the loop to turn.
  CHECK(transport.queued_bytes() == expected.size());
  editor_side.on_data = [&] {
    if (editor_side.data.size() == expected.size() && closed == 0) transport.close([&] { ++closed; });
  };
  loop.run();
  CHECK_FALSE(loop.timed_out());
  CHECK(editor_side.data.size() == expected.size());
  CHECK(editor_side.data == expected);
  CHECK(editor_side.reads < 100);  // far fewer reads than writes: the writes were coalesced
  CHECK(errors == 0);
  CHECK(closed == 1);
  CHECK(transport.queued_bytes() == 0);
  ::close(in.write_end);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: writes larger than the pipe, and writes while one is in flight, keep their order",
          "[transport]") {
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();
  StdioTransport transport(loop.get(), in.read_end, out.write_end);
  PipeReader editor_side(loop.get(), out.read_end);
  int errors = 0, closed = 0;
  REQUIRE(transport.start({[](std::string_view) {}, [] {}, [&](const std::string&) { ++errors; }}).ok());

  std::string expected;
  for (int i = 0; i < 64; ++i) {
    std::string chunk = pattern(64 << 10, 100 + i);
    transport.write(chunk);
    expected += chunk;
  }
  bool added = false;
  std::size_t queued_while_in_flight = 0;
  std::string tail;
  for (int i = 0; i < 100; ++i) tail += "tail " + std::to_string(i) + "\n";
  editor_side.on_data = [&] {
    if (!added) {
      // The 4 MiB cannot all fit in the pipe, so a write is still in flight now.
      added = true;
      queued_while_in_flight = transport.queued_bytes();
      for (int i = 0; i < 100; ++i) transport.write("tail " + std::to_string(i) + "\n");
      expected += tail;
    }
    if (editor_side.data.size() == expected.size() && closed == 0) transport.close([&] { ++closed; });
  };
  loop.run();
  CHECK_FALSE(loop.timed_out());
  CHECK(queued_while_in_flight > 0);
  CHECK(editor_side.data.size() == expected.size());
  CHECK(editor_side.data == expected);
  CHECK(errors == 0);
  CHECK(closed == 1);
  ::close(in.write_end);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: writing to a closed reader reports on_error (EPIPE)", "[transport]") {
  ignore_sigpipe();
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();
  ::close(out.read_end);  // the editor is gone
  StdioTransport transport(loop.get(), in.read_end, out.write_end);
  std::vector<std::string> problems;
  REQUIRE(transport.start({[](std::string_view) {}, [] {}, [&](const std::string& p) { problems.push_back(p); }}).ok());
  transport.write("Content-Length: 2\r\n\r\n{}");
  loop.run_once();
  loop.run_once();
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("writing stdout failed") != std::string::npos);
  CHECK(problems[0].find(uv_strerror(UV_EPIPE)) != std::string::npos);
  // Later writes are dropped without another report.
  transport.write("more");
  loop.run_once();
  CHECK(problems.size() == 1);
  CHECK(transport.queued_bytes() == 0);
  int closed = 0;
  transport.close([&] { ++closed; });
  ::close(in.write_end);
  loop.run();
  CHECK(closed == 1);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: close() flushes everything queued, then runs its callback once", "[transport]") {
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();
  StdioTransport transport(loop.get(), in.read_end, out.write_end);
  PipeReader editor_side(loop.get(), out.read_end);
  REQUIRE(transport.start({[](std::string_view) {}, [] {}, [](const std::string&) {}}).ok());
  const std::string data = pattern(1 << 20, 3);
  transport.write(data);
  int closed = 0;
  std::size_t queued_at_close = 99;
  transport.close([&] {
    ++closed;
    queued_at_close = transport.queued_bytes();
  });
  transport.close([&] { closed += 100; });  // a second close while closing is ignored
  loop.run();
  CHECK_FALSE(loop.timed_out());
  CHECK(closed == 1);
  CHECK(queued_at_close == 0);
  CHECK(editor_side.data == data);
  CHECK(editor_side.eof);
  ::close(in.write_end);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: a regular file as stdin is read to its end", "[transport]") {
  TestLoop loop;
  const std::string content = pattern(300 << 10, 4);  // several 64 KiB reads
  TempFile file(content);
  int file_fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(file_fd >= 0);
  FdPair out = make_pipe();
  auto transport = std::make_unique<StdioTransport>(loop.get(), file_fd, out.write_end);
  PipeReader editor_side(loop.get(), out.read_end);
  std::string received;
  int eofs = 0, closed = 0;
  REQUIRE(transport->start({[&](std::string_view b) { received.append(b); },
                            [&] {
                              ++eofs;
                              transport->close([&] { ++closed; });
                            },
                            [](const std::string&) {}})
              .ok());
  loop.run();
  CHECK_FALSE(loop.timed_out());
  CHECK(received == content);
  CHECK(eofs == 1);
  CHECK(closed == 1);
  transport.reset();
  ::close(file_fd);  // a file descriptor is not the transport's to close
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: a regular file as stdout receives every write", "[transport]") {
  TestLoop loop;
  TempFile file("");
  int file_fd = ::open(file.path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  REQUIRE(file_fd >= 0);
  FdPair in = make_pipe();
  StdioTransport transport(loop.get(), in.read_end, file_fd);
  REQUIRE(transport.start({[](std::string_view) {}, [] {}, [](const std::string&) {}}).ok());
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    std::string line = "line " + std::to_string(i) + "\n";
    transport.write(line);
    expected += line;
  }
  int closed = 0;
  transport.close([&] { ++closed; });
  ::close(in.write_end);
  loop.run();
  CHECK(closed == 1);
  ::close(file_fd);
  CHECK(file.read() == expected);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: destroying it with a write in flight leaves nothing behind", "[transport]") {
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();  // nobody reads out.read_end: the pipe fills up
  auto transport = std::make_unique<StdioTransport>(loop.get(), in.read_end, out.write_end);
  int errors = 0;
  REQUIRE(transport->start({[](std::string_view) {}, [] {}, [&](const std::string&) { ++errors; }}).ok());
  transport->write(pattern(1 << 20, 5));
  for (int i = 0; i < 3; ++i) loop.run_once();
  CHECK(transport->queued_bytes() > 0);  // stuck in flight
  transport.reset();
  CHECK(errors == 0);
  ::close(out.read_end);
  ::close(in.write_end);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: start() on a descriptor that is not open fails and leaks nothing", "[transport]") {
  TestLoop loop;
  FdPair in = make_pipe();
  // A descriptor number nothing has open (a freshly closed one could be reused by libuv itself).
  const int closed_fd = 4000;
  REQUIRE(::fcntl(closed_fd, F_GETFD) == -1);
  {
    StdioTransport transport(loop.get(), in.read_end, closed_fd);
    auto started = transport.start({[](std::string_view) {}, [] {}, [](const std::string&) {}});
    REQUIRE_FALSE(started.ok());
    CHECK(started.error().message.find("descriptor " + std::to_string(closed_fd)) != std::string::npos);
  }
  ::close(in.write_end);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: what on_data writes leaves before the loop turns again, in one write", "[transport]") {
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();
  REQUIRE(::fcntl(out.read_end, F_SETFL, O_NONBLOCK) == 0);
  StdioTransport transport(loop.get(), in.read_end, out.write_end);
  int reads = 0;
  REQUIRE(transport.start({[&](std::string_view bytes) {
                             ++reads;
                             transport.write("re:");
                             transport.write(bytes);
                           },
                           [] {}, [](const std::string&) {}})
              .ok());
  REQUIRE(write_all(in.write_end, "ping"));
  // One turn: the read arrives and on_data answers. Queued for a later turn (an idle handle),
  // the answer would not be in the pipe yet.
  for (int turn = 0; turn < 100 && reads == 0; ++turn) loop.run_once();
  REQUIRE(reads == 1);
  char buf[64];
  ssize_t n = ::read(out.read_end, buf, sizeof buf);
  CHECK(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0) == "re:ping");
  CHECK(transport.queued_bytes() == 0);
  ::close(in.write_end);
  transport.close([] {});
  loop.run();
  ::close(out.read_end);
  CHECK(loop.finish() == 0);
}

TEST_CASE("stdio transport: on_data may close and delete its own transport", "[transport]") {
  // As `lockroom run` does when its input ends the session: the transport must not touch
  // itself after on_data returns.
  TestLoop loop;
  FdPair in = make_pipe();
  FdPair out = make_pipe();
  auto* transport = new StdioTransport(loop.get(), in.read_end, out.write_end);
  PipeReader editor_side(loop.get(), out.read_end);
  int closed = 0;
  REQUIRE(transport->start({[&](std::string_view) {
                              transport->write("bye");
                              transport->close([&] {
                                ++closed;
                                delete transport;
                              });
                            },
                            [] {}, [](const std::string&) {}})
              .ok());
  REQUIRE(write_all(in.write_end, "last words"));
  loop.run();
  CHECK_FALSE(loop.timed_out());
  CHECK(closed == 1);
  CHECK(editor_side.data == "bye");
  ::close(in.write_end);
  CHECK(loop.finish() == 0);
}
