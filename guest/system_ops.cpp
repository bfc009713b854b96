// health and guest.resume; see system_ops.h.
#include "guest/system_ops.h"

#include <fcntl.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>

#include "guest/log.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {

std::int64_t meminfo_kib(const std::string& text, const std::string& key) {
  auto at = text.find("\n" + key + ":");
  if (at == std::string::npos && text.rfind(key + ":", 0) == 0) at = 0;
  else if (at != std::string::npos) at += 1;
  else return 0;
  return std::strtoll(text.c_str() + at + key.size() + 1, nullptr, 10);
}

}  // namespace

Outcome health(HealthCounts counts) {
  channel::HealthResult result;
  timespec boot{};
  clock_gettime(CLOCK_BOOTTIME, &boot);
  result.uptime_ms = static_cast<std::int64_t>(boot.tv_sec) * 1000 + boot.tv_nsec / 1000000;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3)
    for (int i = 0; i < 3; ++i) result.load[i] = load[i];
  std::ifstream file("/proc/meminfo");
  std::stringstream text;
  text << file.rdbuf();
  result.memory_total_kib = meminfo_kib(text.str(), "MemTotal");
  result.memory_available_kib = meminfo_kib(text.str(), "MemAvailable");
  result.processes = static_cast<std::int64_t>(counts.processes);
  result.streams = static_cast<std::int64_t>(counts.streams);
  return channel::to_json(result);
}

Outcome guest_resume(const json& params, bool set_clock) {
  auto parsed = channel::parse_resume_params(params);
  if (!parsed) return invalid_params(parsed.error());
  channel::ResumeResult result;

  int fd = ::open("/dev/urandom", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "guest.resume: opening /dev/urandom");
  std::size_t bytes = parsed->entropy.size();
  std::unique_ptr<char[]> storage(new char[sizeof(rand_pool_info) + bytes]);
  auto* pool = reinterpret_cast<rand_pool_info*>(storage.get());
  pool->entropy_count = static_cast<int>(bytes * 8);
  pool->buf_size = static_cast<int>(bytes);
  std::memcpy(pool->buf, parsed->entropy.data(), bytes);
  if (::ioctl(fd, RNDADDENTROPY, pool) != 0) {
    int err = errno;
    ::close(fd);
    explicit_bzero(storage.get(), sizeof(rand_pool_info) + bytes);
    return errno_error(err, "guest.resume: RNDADDENTROPY was refused (the agent needs CAP_SYS_ADMIN)");
  }
  explicit_bzero(storage.get(), sizeof(rand_pool_info) + bytes);
  result.entropy_bytes = static_cast<std::int64_t>(bytes);
  if (::ioctl(fd, RNDRESEEDCRNG) == 0) {
    result.reseeded = true;
  } else {
    log_warn(std::string("guest.resume: RNDRESEEDCRNG failed: ") + std::strerror(errno) + "; the entropy was still added");
  }
  ::close(fd);

  if (set_clock) {
    timespec now{static_cast<time_t>(parsed->unix_time_ns / 1000000000LL), static_cast<long>(parsed->unix_time_ns % 1000000000LL)};
    if (clock_settime(CLOCK_REALTIME, &now) != 0) return errno_error(errno, "guest.resume: setting the clock");
    result.clock_set = true;
  }
  return channel::to_json(result);
}

}  // namespace lockroom::agent
