// A stand-in guest agent for the integration tests of server/vm: opens the virtio-serial port
// named by lockroom.port= on the kernel command line (default "agent"), writes "ready\n", then
// answers each line it reads with "echo: LINE\n". It exercises everything /init promises
// (guest/README.md) without depending on the real agent's protocol.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

int main() {
  std::ifstream cmdline("/proc/cmdline");
  std::string word, port = "agent";
  while (cmdline >> word)
    if (word.rfind("lockroom.port=", 0) == 0) port = word.substr(14);
  std::string path = "/dev/virtio-ports/" + port;
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  const std::string hello = "ready\n";
  if (write(fd, hello.data(), hello.size()) < 0) return 1;
  std::string pending;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) {
      usleep(10000);  // host side not connected: reads return 0 until it is
      continue;
    }
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string reply = "echo: " + pending.substr(0, nl) + "\n";
      pending.erase(0, nl + 1);
      if (write(fd, reply.data(), reply.size()) < 0) return 1;
    }
  }
}
