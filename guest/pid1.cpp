// Process set-up for PID 1 and for host runs; see pid1.h.
#include "guest/pid1.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "guest/log.h"

extern char** environ;

namespace lockroom::agent {

namespace {

bool mounted(const std::string& target) {
  std::ifstream mounts("/proc/self/mounts");
  std::string device, point, rest;
  while (mounts >> device >> point && std::getline(mounts, rest))
    if (point == target) return true;
  return false;
}

void mount_devpts() {
  if (mounted("/dev/pts")) return;
  ::mkdir("/dev/pts", 0755);
  if (::mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=620,ptmxmode=666") != 0) {
    log_warn(std::string("cannot mount devpts on /dev/pts (terminals will not work): ") + std::strerror(errno));
  }
}

}  // namespace

void prepare_process(bool pid1) {
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) {
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
      }
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  ::umask(022);
  if (pid1) {
    mount_devpts();
    if (::chdir("/") != 0) log_warn("cannot change to /");
  } else if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    log_warn(std::string("cannot become a child subreaper: ") + std::strerror(errno));
  }
}

std::vector<std::string> base_environment(bool pid1) {
  std::vector<std::string> env;
  bool has_path = false, has_home = false;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("PATH=", 0) == 0) has_path = true;
    if (entry.rfind("HOME=", 0) == 0) {
      if (pid1) continue;  // the kernel passes HOME=/; a guest's root works in /root
      has_home = true;
    }
    env.push_back(std::move(entry));
  }
  if (!has_path) env.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  if (!has_home) env.push_back("HOME=/root");
  return env;
}

std::string read_kernel_cmdline() {
  std::ifstream file("/proc/cmdline");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace lockroom::agent
