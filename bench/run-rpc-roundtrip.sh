#!/usr/bin/env bash
# Request round-trip throughput: lockroom vs. a minimal vscode-jsonrpc server on Node, one run.
#
# Builds lockroom and lockroom-bench-rpc (the driver, bench/rpc_roundtrip/driver.cpp), installs the
# Node peer's locked dependencies (bench/rpc_roundtrip/node-peer, `npm ci`, skipped when already
# done), drives both servers over stdio with the same workload, and prints a table. The target
# (from the issue): lockroom >= 3x the Node peer in requests/s. A missed target prints MISS; only
# a failed run (bad reply, crash, non-zero exit after shutdown) makes the script exit non-zero.
#
# usage: bench/run-rpc-roundtrip.sh [--quick] [--pin-sequential P] [--pin-pipelined P] [DRIVER OPTIONS...]
#   --quick            a short smoke run (1 repetition of a few thousand requests)
#   --pin-sequential P CPU placement of driver and server in the sequential mode (default: same)
#   --pin-pipelined P  the same for the pipelined mode (default: same)
#                      P is one of: same   both on CPU 0 (taskset): a round trip is both sides'
#                                          work back to back, with no idle CPU to wake up
#                                  split  driver on CPU 0, server on CPU 1: they run side by side
#                                  none   no pinning, the kernel places them
#                      Whatever is chosen applies to both servers alike.
#   DRIVER OPTIONS     passed to every run, e.g. --reps 3 --window 16 (see lockroom-bench-rpc)
# environment:
#   BUILD_DIR          build directory (default: build, configured with `cmake --preset default`)
#   JOBS               parallel build jobs (default: 2)
#   NODE               node binary (default: node)
#   LOCKROOM           a lockroom binary to measure instead of BUILD_DIR's (e.g. a build of a branch)
#   DRIVER             a lockroom-bench-rpc binary to use instead of BUILD_DIR's; with LOCKROOM
#                      too, nothing is built
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/common/preamble.sh"
node_bin=${NODE:-node}
peer_dir=$root/bench/rpc_roundtrip/node-peer
target_ratio=3

driver_opts=()
pin_sequential=same
pin_pipelined=same
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) driver_opts+=(--reps 1 --sequential 2000 --pipelined 10000 --warmup 2000) ;;
    --pin-sequential) pin_sequential=${2:?--pin-sequential needs same, split or none}; shift ;;
    --pin-pipelined) pin_pipelined=${2:?--pin-pipelined needs same, split or none}; shift ;;
    *) driver_opts+=("$1") ;;
  esac
  shift
done
for pin in "$pin_sequential" "$pin_pipelined"; do
  case $pin in
    same | none) ;;
    split) if [[ $(nproc) -lt 2 ]]; then printf 'error: --pin... split needs 2 CPUs, this machine has %s\n' "$(nproc)" >&2; exit 2; fi ;;
    *) printf 'error: CPU placement must be same, split or none, got "%s"\n' "$pin" >&2; exit 2 ;;
  esac
done
if [[ $pin_sequential != none || $pin_pipelined != none ]] && ! command -v taskset >/dev/null; then
  printf 'error: taskset (util-linux) is needed for CPU pinning; or pass --pin-sequential none --pin-pipelined none\n' >&2
  exit 2
fi

say() { printf '%s\n' "$*" >&2; }

# --- build ---------------------------------------------------------------------------------------
targets=()
[[ -z ${LOCKROOM:-} ]] && targets+=(lockroom)
[[ -z ${DRIVER:-} ]] && targets+=(lockroom-bench-rpc)
[[ ${#targets[@]} -gt 0 ]] && bench_build "${targets[@]}"
lockroom=${LOCKROOM:-$build_dir/bin/lockroom}
driver=${DRIVER:-$build_dir/bin/lockroom-bench-rpc}
if [[ -n ${LOCKROOM:-} ]]; then
  build_type="binary given in LOCKROOM"
else
  build_type=$(bench_build_type)
fi

# --- the Node peer -------------------------------------------------------------------------------
if ! command -v "$node_bin" >/dev/null; then
  say "error: node is needed for the peer server (set NODE=/path/to/node)"
  exit 1
fi
if [[ ! -f $peer_dir/node_modules/.package-lock.json || $peer_dir/package-lock.json -nt $peer_dir/node_modules/.package-lock.json ]]; then
  say "installing the Node peer's locked dependencies (npm ci)"
  (cd "$peer_dir" && npm ci --no-audit --no-fund >&2)
fi
jsonrpc_version=$("$node_bin" -p "require('$peer_dir/node_modules/vscode-jsonrpc/package.json').version")

# --- runs ----------------------------------------------------------------------------------------
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
failed=0
# run NAME MODE PIN SERVER-COMMAND...: one driver run of one mode (the other mode's count is 0).
run() {
  local name=$1 mode=$2 pin=$3
  shift 3
  local driver_cmd=("$driver") server_prefix=()
  case $pin in
    same) driver_cmd=(taskset -c 0 "$driver") ;;  # the server inherits CPU 0
    split) driver_cmd=(taskset -c 0 "$driver") server_prefix=(taskset -c 1) ;;
  esac
  local skip=(--pipelined 0)
  [[ $mode == pipelined ]] && skip=(--sequential 0)
  say "== $name, $mode, CPUs: $pin: $*"
  if ! "${driver_cmd[@]}" --name "$name" "${driver_opts[@]}" "${skip[@]}" -- "${server_prefix[@]}" "$@" >>"$results"; then
    say "FAILED: the $name $mode run did not complete"
    failed=1
  fi
}
for mode in sequential pipelined; do
  pin=$pin_sequential
  [[ $mode == pipelined ]] && pin=$pin_pipelined
  run lockroom $mode "$pin" "$lockroom" serve --stdio --standalone
  run node $mode "$pin" "$node_bin" "$peer_dir/echo-server.js"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- table ---------------------------------------------------------------------------------------
echo
echo "lockroom/echo round trips over stdio, ~200-byte params; lockroom $("$lockroom" version 2>/dev/null | awk '{print $NF}') ($build_type) vs node $("$node_bin" --version) + vscode-jsonrpc $jsonrpc_version"
echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); load average before the runs: $load_before, after: $load_after"
echo "CPU placement (both servers alike): sequential $pin_sequential, pipelined $pin_pipelined"
echo
awk -v target="$target_ratio" '
  function field(name,   i, kv) {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
    return ""
  }
  function commas(n,   s) { s = sprintf("%.0f", n); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]([^0-9]|$)/, ",&", s); return s }
  $1 == "result" {
    s = field("server"); m = field("mode")
    if (!(m in seen)) { seen[m] = 1; modes[++nm] = m }
    rps[s, m] = field("rps"); lo[s, m] = field("rps_min"); hi[s, m] = field("rps_max")
    cpu[s, m] = field("server_cpu_us"); reps[m] = field("reps"); n[m] = field("n")
    p50[s, m] = field("p50_us"); p99[s, m] = field("p99_us")
  }
  END {
    fmt = "%-9s | %-13s | %22s | %17s | %15s | %19s | %s\n"
    printf fmt, "server", "mode", "requests/s (median)", "min .. max", "server CPU/req", "ratio lockroom/node", "CPU/req node/lockroom"
    printf fmt, "---------", "-------------", "----------------------", "-----------------", "---------------", "-------------------", "---------------------"
    split("lockroom node", servers, " ")
    for (i = 1; i <= nm; i++) {
      m = modes[i]
      ratio = (("lockroom", m) in rps && ("node", m) in rps && rps["node", m] > 0) ? rps["lockroom", m] / rps["node", m] : -1
      for (j = 1; j <= 2; j++) {
        s = servers[j]
        if (!((s, m) in rps)) continue
        r = (s == "lockroom" && ratio >= 0) ? sprintf("%.2fx", ratio) : ""
        c = (s == "lockroom" && ratio >= 0 && cpu["lockroom", m] > 0 && cpu["node", m] != "-") ? sprintf("%.2fx", cpu["node", m] / cpu["lockroom", m]) : ""
        printf fmt, s, m, commas(rps[s, m]) " (of " reps[m] ")", commas(lo[s, m]) " .. " commas(hi[s, m]),
               (cpu[s, m] == "-" ? "?" : cpu[s, m] " us"), r, c
      }
      ratios[m] = ratio
    }
    print ""
    printf "%-9s | %-10s | %10s | %10s\n", "server", "mode", "p50", "p99"
    printf "%-9s | %-10s | %10s | %10s\n", "---------", "----------", "----------", "----------"
    for (j = 1; j <= 2; j++) {
      s = servers[j]
      if ((s, "sequential") in p50) printf "%-9s | %-10s | %7.1f us | %7.1f us\n", s, "sequential", p50[s, "sequential"], p99[s, "sequential"]
    }
    print ""
    for (i = 1; i <= nm; i++) {
      m = modes[i]
      if (ratios[m] < 0) { printf "target lockroom >= %sx node, %s: no comparison (a run failed)\n", target, m; continue }
      printf "target lockroom >= %sx node, %s: %.2fx  %s\n", target, m, ratios[m], (ratios[m] >= target ? "PASS" : "MISS")
    }
    print "(requests/s is wall-clock and moves with the load on the machine; server CPU per request, read"
    print " from /proc with 10 ms ticks, is the steadier measure of each server'"'"'s own cost)"
  }' "$results"

if [[ $failed != 0 ]]; then
  say "error: at least one run failed (see above)"
  exit 1
fi
