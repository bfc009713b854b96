// A hostile guest program for tests/integration/test_hostile_guest.cpp: it tries to take the
// agent's end of the host channel the way a compromised agent would (pidfd_getfd(2) on PID 1,
// or opening the virtio-serial port itself) and, when it has it, speaks on it.
//
//   guest-attacker take            report whether the channel can be taken (exit 0: taken, 3: refused)
//   guest-attacker random BYTES    write BYTES random bytes
//   guest-attacker huge            a frame header announcing a 4 GiB payload, then bytes
//   guest-attacker lie-exit PID    a well-formed process.exited for PID (one the host never started,
//                                  or a real one that has not exited), twice
//   guest-attacker flood N         N well-formed workspace.changed notifications
//   guest-attacker steal SECONDS   read (swallow) what the host sends for SECONDS, then exit
//   guest-attacker connect N PORT  open N TCP connections to 127.0.0.1:PORT at once, hold them 2 s
//
// Built static (it runs in a guest that has only the agent's libraries). Plain C library calls only.
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace {

// The channel: the descriptor of PID 1 that is a virtio-serial port, copied into this process.
// -1 with a message on stderr when it cannot be taken.
int take_channel() {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, 1, 0));
  if (pidfd < 0) {
    fprintf(stderr, "pidfd_open(1): %s\n", strerror(errno));
  }
  DIR* fds = opendir("/proc/1/fd");
  if (!fds) fprintf(stderr, "opendir /proc/1/fd: %s\n", strerror(errno));
  int taken = -1;
  while (fds && taken < 0) {
    dirent* e = readdir(fds);
    if (!e) break;
    if (e->d_name[0] == '.') continue;
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/1/fd/%s", e->d_name);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strncmp(target, "/dev/vport", 10) != 0) continue;
    if (pidfd < 0) break;
    taken = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0));
    if (taken < 0) fprintf(stderr, "pidfd_getfd(%s): %s\n", target, strerror(errno));
  }
  if (fds) closedir(fds);
  if (taken >= 0) return taken;
  // Without PID 1's descriptor: the port itself (the agent holds it open; a second open is refused
  // by the driver, or by the device's permissions).
  DIR* dev = opendir("/dev");
  while (dev && taken < 0) {
    dirent* e = readdir(dev);
    if (!e) break;
    if (strncmp(e->d_name, "vport", 5) != 0) continue;
    char path[64];
    snprintf(path, sizeof path, "/dev/%s", e->d_name);
    taken = open(path, O_RDWR | O_CLOEXEC);
    if (taken < 0) fprintf(stderr, "open %s: %s\n", path, strerror(errno));
  }
  if (dev) closedir(dev);
  return taken;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 100);
      continue;
    }
    if (n <= 0) {
      fprintf(stderr, "write: %s\n", n < 0 ? strerror(errno) : "wrote nothing");
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// One CONTROL frame (kind 1, stream 0) holding `json`, written with one write(2).
bool write_control(int fd, const char* json) {
  char frame[4096];
  size_t len = strlen(json);
  if (len + 12 > sizeof frame) return false;
  memset(frame, 0, 12);
  frame[0] = 1;
  frame[8] = static_cast<char>(len >> 24), frame[9] = static_cast<char>(len >> 16);
  frame[10] = static_cast<char>(len >> 8), frame[11] = static_cast<char>(len);
  memcpy(frame + 12, json, len);
  return write_all(fd, frame, len + 12);
}

int connect_many(int count, int port) {
  int opened = 0;
  int* fds = static_cast<int*>(calloc(static_cast<size_t>(count), sizeof(int)));
  for (int i = 0; i < count; ++i) {
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fds[i] < 0) break;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || errno == EINPROGRESS) ++opened;
    // Half a request on each: the proxy has to hold every one of them.
    (void)!write(fds[i], "CONNECT example.com:443 HTTP/1.1\r\n", 34);
  }
  printf("opened %d\n", opened);
  fflush(stdout);
  sleep(2);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: guest-attacker take|random N|huge|lie-exit PID|flood N|steal S|connect N PORT\n");
    return 2;
  }
  const char* mode = argv[1];
  if (strcmp(mode, "connect") == 0 && argc >= 4) return connect_many(atoi(argv[2]), atoi(argv[3]));
  int fd = take_channel();
  if (fd < 0) {
    printf("refused\n");
    return 3;
  }
  printf("taken\n");
  fflush(stdout);
  if (strcmp(mode, "take") == 0) return 0;
  if (strcmp(mode, "random") == 0 && argc >= 3) {
    size_t size = strtoul(argv[2], nullptr, 10);
    char* bytes = static_cast<char*>(malloc(size));
    int urandom = open("/dev/urandom", O_RDONLY);
    if (!bytes || urandom < 0 || read(urandom, bytes, size) != static_cast<ssize_t>(size)) return 1;
    return write_all(fd, bytes, size) ? 0 : 1;
  }
  if (strcmp(mode, "huge") == 0) {
    const char header[12] = {1, 0, 0, 0, 0, 0, 0, 0, '\xff', '\xff', '\xff', '\xff'};
    char filler[4096];
    memset(filler, 'x', sizeof filler);
    if (!write_all(fd, header, sizeof header)) return 1;
    for (int i = 0; i < 64; ++i)
      if (!write_all(fd, filler, sizeof filler)) return 1;
    return 0;
  }
  if (strcmp(mode, "lie-exit") == 0 && argc >= 3) {
    char json[256];
    snprintf(json, sizeof json, "{\"jsonrpc\":\"2.0\",\"method\":\"process.exited\",\"params\":{\"pid\":%s,\"exitCode\":0}}", argv[2]);
    return write_control(fd, json) && write_control(fd, json) ? 0 : 1;
  }
  if (strcmp(mode, "flood") == 0 && argc >= 3) {
    long count = strtol(argv[2], nullptr, 10);
    const char* note = "{\"jsonrpc\":\"2.0\",\"method\":\"workspace.changed\",\"params\":{\"path\":\"/workspace\"}}";
    // 40 frames per write: a million of them in reasonable time under TCG.
    size_t len = strlen(note), one = len + 12;
    char batch[40 * 128];
    for (int i = 0; i < 40; ++i) {
      char* f = batch + i * one;
      memset(f, 0, 12);
      f[0] = 1;
      f[10] = static_cast<char>(len >> 8), f[11] = static_cast<char>(len);
      memcpy(f + 12, note, len);
    }
    long sent = 0;
    for (; sent < count; sent += 40)
      if (!write_all(fd, batch, 40 * one)) break;
    printf("sent %ld\n", sent);
    return sent >= count ? 0 : 1;
  }
  if (strcmp(mode, "steal") == 0 && argc >= 3) {
    time_t end = time(nullptr) + atoi(argv[2]);
    char buffer[65536];
    long stolen = 0;
    while (time(nullptr) < end) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 200) > 0) {
        ssize_t n = read(fd, buffer, sizeof buffer);
        if (n > 0) stolen += n;
      }
    }
    printf("stole %ld bytes\n", stolen);
    return 0;
  }
  fprintf(stderr, "guest-attacker: unknown mode %s\n", mode);
  return 2;
}
