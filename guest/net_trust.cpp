// net.trust's files; see net_trust.h.
#include "guest/net_trust.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "guest/write_all.h"

namespace lockroom::agent {

namespace {

// The bundles distributions ship, first match wins.
constexpr const char* kSystemBundles[] = {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"};

std::string system_bundle() {
  for (const char* path : kSystemBundles) {
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  return {};
}

// Writes `content` to `path` through a temporary file in the same folder; errno on failure.
int write_replace(const std::string& path, const std::string& content) {
  std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return errno;
  if (!write_all(fd, content)) {
    int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return err;
  }
  if (::fchmod(fd, 0644) != 0 || ::close(fd) != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return err;
  }
  return 0;
}

}  // namespace

std::variant<protocol::channel::NetTrustResult, RpcError> install_ca(const std::string& dir, const std::string& pem) {
  // mkdir -p: the default guest image has no /etc/ssl at all.
  for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return errno_error(errno, "net.trust: creating " + part);
    if (slash == std::string::npos) break;
  }
  protocol::channel::NetTrustResult result;
  result.certificate = dir + "/lockroom-ca.pem";
  result.bundle = dir + "/lockroom-bundle.pem";
  std::string ca = pem.back() == '\n' ? pem : pem + "\n";
  if (int err = write_replace(result.certificate, ca)) return errno_error(err, "net.trust: writing " + result.certificate);
  std::string bundle = system_bundle();
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');
  if (int err = write_replace(result.bundle, bundle + ca)) return errno_error(err, "net.trust: writing " + result.bundle);
  return result;
}

}  // namespace lockroom::agent
