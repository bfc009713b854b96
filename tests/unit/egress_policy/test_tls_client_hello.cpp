// ClientHello parsing against real ClientHellos: `openssl s_client` connects to a loopback
// socket this test listens on, and the bytes it sends are parsed whole, split across TLS
// records, truncated at every length, and corrupted.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "server/egress/policy/tls_client_hello.h"

extern char** environ;

using namespace lockroom::egress;

namespace {

// Runs `openssl s_client` with `extra` arguments against a one-shot loopback listener and
// returns the first bytes it sends (until a whole ClientHello has arrived, or 10 s).
std::string capture_client_hello(const std::vector<std::string>& extra) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(listener, 1) == 0);
  socklen_t length = sizeof address;
  REQUIRE(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);

  std::vector<std::string> args = {"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(ntohs(address.sin_port))};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int spawned = posix_spawnp(&pid, "openssl", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(spawned == 0);

  std::string bytes;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  pollfd listen_poll{listener, POLLIN, 0};
  int client = -1;
  if (poll(&listen_poll, 1, 10000) == 1) client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  while (client >= 0 && std::chrono::steady_clock::now() < deadline &&
         parse_client_hello(bytes).status == ClientHelloStatus::kNeedMore) {
    pollfd p{client, POLLIN, 0};
    if (poll(&p, 1, 1000) != 1) continue;
    char buffer[4096];
    ssize_t n = read(client, buffer, sizeof buffer);
    if (n <= 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  if (client >= 0) close(client);
  close(listener);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  return bytes;
}

// The same handshake message re-framed into records of at most `fragment` bytes each.
std::string refragment(const std::string& records, std::size_t fragment) {
  std::string handshake;
  for (std::size_t pos = 0; pos + 5 <= records.size();) {
    std::size_t length = (static_cast<std::uint8_t>(records[pos + 3]) << 8) | static_cast<std::uint8_t>(records[pos + 4]);
    handshake += records.substr(pos + 5, length);
    pos += 5 + length;
  }
  std::string out;
  for (std::size_t pos = 0; pos < handshake.size(); pos += fragment) {
    std::string part = handshake.substr(pos, fragment);
    out += std::string("\x16\x03\x01", 3);
    out += static_cast<char>(part.size() >> 8);
    out += static_cast<char>(part.size() & 0xff);
    out += part;
  }
  return out;
}

}  // namespace

TEST_CASE("a real ClientHello from openssl s_client gives its SNI and ALPN list") {
  std::string hello = capture_client_hello({"-servername", "Api.Example.TEST", "-alpn", "h2,http/1.1"});
  ClientHelloResult result = parse_client_hello(hello);
  INFO(client_hello_status_name(result.status) << " " << result.error << " after " << hello.size() << " bytes");
  REQUIRE(result.status == ClientHelloStatus::kComplete);
  REQUIRE(result.info.sni);
  CHECK(*result.info.sni == "api.example.test");
  CHECK(result.info.alpn == std::vector<std::string>{"h2", "http/1.1"});
  CHECK(result.info.offers_tls13);
  CHECK_FALSE(result.info.encrypted_client_hello);
  CHECK(result.length == hello.size());

  // Extra bytes after the ClientHello do not change the answer or its length.
  ClientHelloResult with_more = parse_client_hello(hello + std::string("\x14\x03\x03\x00\x01\x01", 6));
  CHECK(with_more.status == ClientHelloStatus::kComplete);
  CHECK(with_more.length == hello.size());

  SECTION("truncated at every length it needs more, and never claims more than it saw") {
    for (std::size_t cut = 0; cut < hello.size(); ++cut) {
      INFO("cut at " << cut);
      REQUIRE(parse_client_hello(std::string_view(hello).substr(0, cut)).status == ClientHelloStatus::kNeedMore);
    }
  }
  SECTION("fed in pieces of every size the reader gives the same answer") {
    for (std::size_t piece : {1u, 2u, 3u, 5u, 7u, 64u, 1000u}) {
      ClientHelloReader reader;
      ClientHelloResult r;
      for (std::size_t pos = 0; pos < hello.size() && r.status == ClientHelloStatus::kNeedMore; pos += piece) {
        r = reader.feed(std::string_view(hello).substr(pos, piece));
      }
      INFO("pieces of " << piece);
      REQUIRE(r.status == ClientHelloStatus::kComplete);
      CHECK(*r.info.sni == "api.example.test");
    }
  }
  SECTION("spread over several records it is reassembled") {
    for (std::size_t fragment : {1u, 3u, 50u, 200u}) {
      std::string split = refragment(hello, fragment);
      ClientHelloResult r = parse_client_hello(split);
      INFO("records of " << fragment << ": " << r.error);
      REQUIRE(r.status == ClientHelloStatus::kComplete);
      CHECK(*r.info.sni == "api.example.test");
      CHECK(r.info.alpn.size() == 2);
      CHECK(r.length == split.size());
      CHECK(parse_client_hello(std::string_view(split).substr(0, split.size() - 1)).status == ClientHelloStatus::kNeedMore);
    }
  }
  SECTION("every single-byte corruption is an answer, never a crash, and the SNI is only ever a valid name") {
    for (std::size_t i = 0; i < hello.size(); ++i) {
      for (unsigned char flip : {0x01, 0x80, 0xff}) {
        std::string bad = hello;
        bad[i] = static_cast<char>(bad[i] ^ flip);
        ClientHelloResult r = parse_client_hello(bad);
        if (r.status == ClientHelloStatus::kComplete && r.info.sni) {
          for (char c : *r.info.sni) REQUIRE((c == '.' || c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')));
        }
      }
    }
  }
}

TEST_CASE("a ClientHello without SNI or ALPN, TLS 1.2 only") {
  std::string hello = capture_client_hello({"-noservername", "-no_tls1_3"});
  ClientHelloResult result = parse_client_hello(hello);
  INFO(result.error);
  REQUIRE(result.status == ClientHelloStatus::kComplete);
  CHECK_FALSE(result.info.sni);
  CHECK(result.info.alpn.empty());
  CHECK_FALSE(result.info.offers_tls13);
}

TEST_CASE("what is not TLS, and TLS that is broken") {
  CHECK(parse_client_hello("").status == ClientHelloStatus::kNeedMore);
  CHECK(parse_client_hello("\x16").status == ClientHelloStatus::kNeedMore);
  CHECK(parse_client_hello("G").status == ClientHelloStatus::kNotTls);
  CHECK(parse_client_hello("GET / HTTP/1.1\r\n\r\n").status == ClientHelloStatus::kNotTls);
  CHECK(parse_client_hello("SSH-2.0-OpenSSH_9.2\r\n").status == ClientHelloStatus::kNotTls);
  CHECK(parse_client_hello(std::string("\x80\x2e\x01\x00\x02", 5)).status == ClientHelloStatus::kNotTls);  // SSLv2
  CHECK(parse_client_hello(std::string("\x16\x02", 2)).status == ClientHelloStatus::kNotTls);

  auto status_of = [](const std::string& bytes) { return parse_client_hello(bytes).status; };
  CHECK(status_of(std::string("\x16\x03\x01\x00\x00", 5)) == ClientHelloStatus::kMalformed);  // empty record
  CHECK(status_of(std::string("\x16\x03\x01\x50\x00", 5)) == ClientHelloStatus::kMalformed);  // record too long
  // A ServerHello (type 2) where a ClientHello belongs.
  CHECK(status_of(std::string("\x16\x03\x01\x00\x04\x02\x00\x00\x00", 9)) == ClientHelloStatus::kMalformed);
  // A ClientHello whose body is too short for its fixed fields.
  ClientHelloResult short_body = parse_client_hello(std::string("\x16\x03\x01\x00\x06\x01\x00\x00\x02\x03\x03", 11));
  CHECK(short_body.status == ClientHelloStatus::kMalformed);
  CHECK_THAT(short_body.error, Catch::Contains("fixed fields"));
  // A handshake message that claims more than the bound.
  CHECK(status_of(std::string("\x16\x03\x01\x00\x04\x01\x01\x00\x00", 9)) == ClientHelloStatus::kMalformed);
  // An alert record after the first handshake record, before the message is whole.
  CHECK(status_of(std::string("\x16\x03\x01\x00\x04\x01\x00\x01\x00\x15\x03\x03\x00\x02\x02\x28", 16)) ==
        ClientHelloStatus::kMalformed);
  // Endless tiny records stop at the bound.
  std::string endless = std::string("\x16\x03\x01\x00\x04\x01\x00\xff\xff", 9);
  while (endless.size() < kMaxClientHelloBytes + 10) endless += std::string("\x16\x03\x01\x00\x01\x00", 6);
  ClientHelloResult bounded = parse_client_hello(endless);
  CHECK(bounded.status == ClientHelloStatus::kMalformed);
  CHECK_THAT(bounded.error, Catch::Contains("64 KiB"));
}

TEST_CASE("hand-built ClientHellos: SNI rules and duplicate extensions") {
  auto u16 = [](std::size_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; };
  auto extension = [&](int type, const std::string& data) { return u16(type) + u16(data.size()) + data; };
  auto sni = [&](const std::string& name) {
    std::string entry = std::string(1, '\0') + u16(name.size()) + name;
    return extension(0, u16(entry.size()) + entry);
  };
  auto hello = [&](const std::string& extensions) {
    std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string(1, '\0') + u16(2) + std::string("\x13\x01", 2) +
                       std::string("\x01\x00", 2) + u16(extensions.size()) + extensions;
    std::string message = std::string(1, '\x01') + std::string(1, '\0') + u16(body.size()) + body;
    return std::string("\x16\x03\x01", 3) + u16(message.size()) + message;
  };
  ClientHelloResult ok = parse_client_hello(hello(sni("Example.COM.")));
  REQUIRE(ok.status == ClientHelloStatus::kComplete);
  CHECK(*ok.info.sni == "example.com");

  for (const char* bad : {"1.2.3.4", "exa mple.com", "a..b", "", "::1"}) {
    ClientHelloResult r = parse_client_hello(hello(sni(bad)));
    INFO(bad);
    CHECK(r.status == ClientHelloStatus::kMalformed);
    CHECK_THAT(r.error, Catch::Contains("server_name"));
  }
  CHECK(parse_client_hello(hello(sni("a.example") + sni("b.example"))).status == ClientHelloStatus::kMalformed);
  ClientHelloResult ech = parse_client_hello(hello(sni("public.example") + extension(0xfe0d, "x")));
  REQUIRE(ech.status == ClientHelloStatus::kComplete);
  CHECK(ech.info.encrypted_client_hello);
  CHECK(parse_client_hello(hello(extension(16, u16(0)))).status == ClientHelloStatus::kMalformed);  // empty ALPN list
  CHECK(parse_client_hello(hello(extension(16, u16(3) + std::string("\x05h2", 3)))).status == ClientHelloStatus::kMalformed);
}
