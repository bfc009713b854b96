// Applying a kit plan to a sandbox/create request, before the sandbox exists.
//
// The request (from the editor or from `lockroom run`'s flags) wins where both say something:
//   env          the kits' variables, then the request's on top
//   resources    the request's value, raised to what the kits need at least
//   network      the kits' rules, then the request's (deny wins whatever the order); "ask" when
//                either asks; the default allow list only if neither turns it off. A request
//                with no network at all stays without network.
//   secrets      union; one name defined differently by a kit and the request is an error
//   workspace    the kits' withhold/allow patterns are added to the request's
//   packages     the kits' Debian packages are added to the request's, sorted, without duplicates
//   npm          the kits' npm specs likewise (two versions of one package: an error)
// The network policy here is the one *before* the default allow list is added; call
// finish_network() after. Pure; no I/O.
#pragma once

#include "server/core/sandbox_manager.h"
#include "server/kits/kit_plan.h"

namespace lockroom::core {

// `policy` is added after `first`'s rules, following the rules above.
egress::Policy merge_policies(egress::Policy first, const egress::Policy& then);

Result<void> apply_kit_plan(const kits::KitPlan& plan, CreateRequest& request);

// Whether this lockroom can give a sandbox everything the plan asks for (today: everything a
// valid plan says; packages must form a set a package image can take).
Result<void> check_kit_plan_supported(const kits::KitPlan& plan);

// Adds the default allow list to a request's policy when it uses it.
void finish_network(CreateRequest& request);

}  // namespace lockroom::core
