// Opening the agent's transport; see transport.h.
#include "guest/transport.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace lockroom::agent {

namespace {

Error sys_error(const std::string& what) { return make_error(ErrorCode::kUnavailable, what + ": " + std::strerror(errno)); }

Result<void> make_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return sys_error("cannot make descriptor " + std::to_string(fd) + " non-blocking");
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return {};
}

Result<Transport> open_device(const std::string& path, const std::string& label) {
  int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return sys_error("cannot open " + label + " " + path);
  return Transport{fd, true, path + " (" + label + ")"};
}

Result<Transport> connect_unix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path)
    return make_error(ErrorCode::kInvalidInput, "socket path is longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes: " + path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("cannot create a unix socket");
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
    Error e = sys_error("cannot connect to " + path);
    ::close(fd);
    return e;
  }
  if (auto r = make_nonblocking(fd); !r) {
    ::close(fd);
    return r.error();
  }
  return Transport{fd, false, "unix socket " + path};
}

}  // namespace

Result<std::string> find_port(const std::string& name, const std::string& sys_root) {
  DIR* dir = ::opendir(sys_root.c_str());
  if (!dir)
    return make_error(ErrorCode::kUnavailable, "no virtio-serial ports (" + sys_root + ": " + std::strerror(errno) +
                                                   "); is the virtio_console module loaded?");
  std::string seen;
  std::string found;
  while (dirent* entry = ::readdir(dir)) {
    std::string port = entry->d_name;
    if (port == "." || port == "..") continue;
    std::ifstream file(sys_root + "/" + port + "/name");
    std::string port_name;
    std::getline(file, port_name);
    seen += (seen.empty() ? "" : ", ") + port + "=\"" + port_name + "\"";
    if (port_name == name) found = port;
  }
  ::closedir(dir);
  if (found.empty())
    return make_error(ErrorCode::kNotFound, "no virtio-serial port is named \"" + name + "\" (ports: " + (seen.empty() ? "none" : seen) +
                                                "); check the QEMU virtserialport name= and lockroom.port=");
  return "/dev/" + found;
}

Result<Transport> open_transport(const AgentSettings& settings) {
  switch (settings.transport) {
    case TransportKind::kPortName: {
      auto path = find_port(settings.port_name);
      if (!path) return path.error();
      return open_device(*path, "port \"" + settings.port_name + "\"");
    }
    case TransportKind::kPortPath:
      return open_device(settings.path, "port");
    case TransportKind::kConnect:
      return connect_unix(settings.path);
    case TransportKind::kFd:
      if (auto r = make_nonblocking(settings.fd); !r) return r.error();
      return Transport{settings.fd, false, "descriptor " + std::to_string(settings.fd)};
  }
  return make_error(ErrorCode::kInternal, "unknown transport");
}

}  // namespace lockroom::agent
