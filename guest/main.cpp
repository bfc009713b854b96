// lockroom-agent: the in-guest program (being built: see protocol/channel.md when it lands).
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("lockroom-agent %s\n", LOCKROOM_VERSION);
    return 0;
  }
  std::fprintf(stderr, "lockroom-agent: no channel support in this build\n");
  return 1;
}
