// resolve_resources / probe_host_capacity; see resources.h.
#include "server/core/resources.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "protocol/channel/messages.h"

namespace lockroom::core {

namespace {

Error too(const char* field, std::int64_t got, const char* relation, std::int64_t bound, const std::string& advice) {
  return make_field_error(std::string("resources.") + field, std::string("resources.") + field + " = " + std::to_string(got) + " is " +
                                                                 relation + " " + std::to_string(bound) + "; " + advice);
}

}  // namespace

Result<Resources> resolve_resources(const ResourceRequest& r, const HostCapacity& host) {
  Resources out;
  if (r.cpus) {
    if (*r.cpus < 1) return too("cpus", *r.cpus, "below the minimum of", 1, "ask for at least 1 vCPU");
    if (*r.cpus > host.cpus)
      return too("cpus", *r.cpus, "more than this machine's", host.cpus, "ask for at most " + std::to_string(host.cpus) + " vCPUs");
    out.cpus = static_cast<int>(*r.cpus);
  }
  // A guest may take at most three quarters of the host's memory, so the host keeps working.
  auto memory_cap = static_cast<std::int64_t>(host.memory_mib * 3 / 4);
  if (r.memory_mib) {
    if (*r.memory_mib < kMinMemoryMib)
      return too("memoryMiB", *r.memory_mib, "below the minimum of", kMinMemoryMib, "the guest kernel needs at least that much");
    if (*r.memory_mib > memory_cap)
      return too("memoryMiB", *r.memory_mib, "more than three quarters of this machine's memory,", memory_cap,
                 "ask for at most " + std::to_string(memory_cap) + " MiB");
    out.memory_mib = static_cast<int>(*r.memory_mib);
  } else if (out.memory_mib > memory_cap) {
    out.memory_mib = static_cast<int>(std::max<std::int64_t>(kMinMemoryMib, memory_cap));
  }
  // Files live in the guest's RAM: they may take what the guest does not need for itself.
  std::int64_t disk_cap = std::min<std::int64_t>(kMaxDiskMib, out.memory_mib - kGuestMemoryOverheadMib);
  if (r.disk_mib) {
    if (*r.disk_mib < kMinDiskMib) return too("diskMiB", *r.disk_mib, "below the minimum of", kMinDiskMib, "ask for at least 16 MiB");
    if (*r.disk_mib > disk_cap)
      return too("diskMiB", *r.disk_mib, ("more than memoryMiB = " + std::to_string(out.memory_mib) + " allows,").c_str(), disk_cap,
                 "the sandbox's files live in its RAM, which also holds the guest kernel, its image and agent (" +
                     std::to_string(kGuestMemoryOverheadMib) + " MiB); ask for at most " + std::to_string(disk_cap) +
                     " MiB or for more memoryMiB");
    out.disk_mib = static_cast<int>(*r.disk_mib);
  } else {
    out.disk_mib = static_cast<int>(std::max<std::int64_t>(kMinDiskMib, std::min<std::int64_t>(out.memory_mib / 2, disk_cap)));
  }
  if (r.lifetime_seconds) {
    if (*r.lifetime_seconds < 1) return too("timeoutSeconds", *r.lifetime_seconds, "below the minimum of", 1, "ask for at least 1 s");
    if (*r.lifetime_seconds > kMaxLifetimeSeconds)
      return too("timeoutSeconds", *r.lifetime_seconds, "above the maximum of", kMaxLifetimeSeconds, "sandboxes are meant to be short-lived");
    out.lifetime_seconds = static_cast<int>(*r.lifetime_seconds);
  }
  if (r.max_processes) {
    if (*r.max_processes < 1) return too("maxProcesses", *r.max_processes, "below the minimum of", 1, "ask for at least 1");
    if (*r.max_processes > kMaxProcesses) return too("maxProcesses", *r.max_processes, "above the maximum of", kMaxProcesses, "ask for less");
    out.max_processes = static_cast<int>(*r.max_processes);
  }
  if (r.max_output_bytes) {
    if (*r.max_output_bytes < 1024) return too("maxOutputBytes", *r.max_output_bytes, "below the minimum of", 1024, "ask for at least 1 KiB");
    out.max_output_bytes = static_cast<std::uint64_t>(*r.max_output_bytes);
  }
  return out;
}

protocol::channel::LimitsParams limits_params(const Resources& resources) {
  protocol::channel::LimitsParams params;
  params.max_processes = resources.max_processes;
  params.max_disk_mib = resources.disk_mib;
  return params;
}

HostCapacity probe_host_capacity() {
  HostCapacity host;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (cpus > 0) host.cpus = static_cast<int>(cpus);
  if (pages > 0 && page_size > 0) host.memory_mib = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) >> 20;
  return host;
}

}  // namespace lockroom::core
