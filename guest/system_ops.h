// The guest-wide methods: health and guest.resume.
//
// guest.resume is what the host calls right after restoring a guest from a snapshot, before
// anything else runs in it: a restored guest wakes up with the template's clock and the
// template's random state, so two sandboxes from one template would otherwise share both. It
// mixes the host's entropy into the kernel pool (RNDADDENTROPY, crediting it) and forces the
// CRNG to reseed (RNDRESEEDCRNG), then sets the wall clock (clock_settime), unless the agent
// runs with --no-clock (tests on a host). Failing to add entropy is an error, never ignored.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstddef>

#include "guest/errors.h"

namespace lockroom::agent {

struct HealthCounts {
  std::size_t processes = 0;
  std::size_t streams = 0;
};

Outcome health(HealthCounts counts);
Outcome guest_resume(const json& params, bool set_clock);

}  // namespace lockroom::agent
