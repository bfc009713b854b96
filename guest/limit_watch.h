// LimitWatch: decides when the guest has met one of its limits and tells the host, once per
// episode, with the notification limit.reached (protocol/channel.md, "Limits").
//
// ProcessLimits::watch() looks once a second while a host is attached and reports here what it
// saw: the root filesystem's usage (full: less than 64 KiB left), forks the pids controller
// refused (a cgroup's pids.events "max" counter rose), and processes the kernel killed for memory
// (vmstat's oom_kill rose). Each kind is one LimitEpisode: a fork bomb that keeps failing, or a
// disk that stays full, is reported once; after kQuiet without a hit the next one is new.
// No I/O here (the readers at the end are pure parsers); loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "guest/disk_limit.h"
#include "guest/limit_episode.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

class LimitWatch {
 public:
  using Clock = std::chrono::steady_clock;
  using Notify = std::function<void(const protocol::channel::LimitReached&)>;
  static constexpr std::chrono::milliseconds kPeriod{1000};
  static constexpr std::chrono::milliseconds kQuiet{5000};

  explicit LimitWatch(std::chrono::milliseconds quiet = kQuiet) : disk_(quiet), processes_(quiet), memory_(quiet) {}
  void set_notify(Notify fn) { notify_ = std::move(fn); }

  // The root filesystem now; `base` is what the image takes, `max_mib` the limit in force.
  void disk(const DiskUsage& usage, std::uint64_t base, std::optional<std::int64_t> max_mib, Clock::time_point now);
  // Forks were refused since the last look. `pid`: the process.start they belong to, when
  // known; `limit`: the pids.max that refused them; `per_process`: that limit was the start's own.
  void forks_refused(std::optional<std::int64_t> pid, std::optional<std::int64_t> limit, bool per_process, Clock::time_point now);
  // The kernel's OOM kill count; a rise since the previous call is a hit (the first sets the base).
  void oom_kills(std::int64_t total, Clock::time_point now);

 private:
  void send(protocol::channel::LimitReached note);

  Notify notify_;
  LimitEpisode disk_;
  LimitEpisode processes_;
  LimitEpisode memory_;
  std::int64_t oom_last_ = 0;
  bool oom_seen_ = false;
};

// The "max N" line of a cgroup's pids.events; nullopt when there is none.
std::optional<std::int64_t> pids_events_max(std::string_view text);
// A counter of /proc/vmstat ("oom_kill 3"); nullopt when the kernel has no such line.
std::optional<std::int64_t> vmstat_counter(std::string_view text, std::string_view name);

}  // namespace lockroom::agent
