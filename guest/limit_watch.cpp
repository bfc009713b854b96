// Limit episodes to limit.reached notifications; see limit_watch.h.
#include "guest/limit_watch.h"

#include <cstdlib>
#include <string>

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {

std::string mib(std::uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// The number after "<name> " at the start of a line of `text`.
std::optional<std::int64_t> line_value(std::string_view text, std::string_view name) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (line.size() > name.size() && line.substr(0, name.size()) == name && line[name.size()] == ' ') {
      std::string digits(line.substr(name.size() + 1));
      char* stop = nullptr;
      long long v = std::strtoll(digits.c_str(), &stop, 10);
      if (stop != digits.c_str() && v >= 0) return v;
      return std::nullopt;
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace

void LimitWatch::send(channel::LimitReached note) {
  if (note.message.size() > channel::kMaxLimitMessage) note.message.resize(channel::kMaxLimitMessage);
  if (notify_) notify_(note);
}

void LimitWatch::disk(const DiskUsage& usage, std::uint64_t base, std::optional<std::int64_t> max_mib, Clock::time_point now) {
  if (!disk_.observe(disk_full(usage), now)) return;
  std::uint64_t files = usage.used > base ? usage.used - base : 0;
  channel::LimitReached note;
  note.limit = channel::GuestLimit::kDisk;
  note.value = max_mib;
  note.message = "the sandbox's disk is full: " + mib(files) + " of files" +
                 (max_mib ? " fill its limit of " + std::to_string(*max_mib) + " MiB (diskMiB)" : std::string(" fill the guest's file space")) +
                 "; writes fail with ENOSPC until files are deleted";
  send(std::move(note));
}

void LimitWatch::forks_refused(std::optional<std::int64_t> pid, std::optional<std::int64_t> limit, bool per_process,
                               Clock::time_point now) {
  if (!processes_.observe(true, now)) return;
  channel::LimitReached note;
  note.limit = channel::GuestLimit::kProcesses;
  note.pid = pid;
  note.value = limit;
  std::string bound = limit ? std::to_string(*limit) + " processes at once" : std::string("processes at once");
  note.message = "a fork was refused: " +
                 (per_process ? "the process's own limit of " + bound : "the sandbox's limit of " + bound + " (maxProcesses)") +
                 " is reached; fork and clone fail with EAGAIN until some exit";
  send(std::move(note));
}

void LimitWatch::oom_kills(std::int64_t total, Clock::time_point now) {
  std::int64_t before = oom_last_;
  if (!counter_rose(total, oom_last_, oom_seen_)) return;
  if (!memory_.observe(true, now)) return;
  channel::LimitReached note;
  note.limit = channel::GuestLimit::kMemory;
  note.message = "the guest ran out of memory: the kernel killed " + std::to_string(total - before) + " process" +
                 (total - before == 1 ? "" : "es") + " to free some (processes and the sandbox's files share memoryMiB)";
  send(std::move(note));
}

std::optional<std::int64_t> pids_events_max(std::string_view text) { return line_value(text, "max"); }

std::optional<std::int64_t> vmstat_counter(std::string_view text, std::string_view name) { return line_value(text, name); }

}  // namespace lockroom::agent
