// Resolving a sandbox's secret values off the loop, before its Proxy is made.
//
// resolve_secret_values() (secret_source.h) blocks — a command may run up to its timeout — so it
// runs here on libuv's thread pool; `done` gets the values (or the first failure, naming the
// secret and its source, never a value) on the loop thread. The caller then puts the values in
// ProxyOptions::secret_values. Loop thread only (except the work itself).
#pragma once

#include <functional>
#include <vector>

#include <uv.h>

#include "server/common/result.h"
#include "server/egress/policy/secrets.h"

namespace lockroom::egress {

void resolve_secret_values_async(uv_loop_t* loop, std::vector<Secret> secrets,
                                 std::function<void(Result<SecretValues>)> done);

}  // namespace lockroom::egress
