#!/usr/bin/env bash
# The ACP face benchmark (bench/acp/bench_acp.js): the scripted ACP agent run directly on the
# host (the peer) and through `lockroom acp` (a sandbox per session), in one run; prints a table.
# The driver's npm packages come from tests/acp (installed as tests/acp/run does).
#   bench/run-acp.sh [--runs N]
# environment: BUILD_DIR (default build), LOCKROOM (a lockroom binary to measure instead)
set -euo pipefail
cd "$(dirname "$0")/.."
lockroom=${LOCKROOM:-${BUILD_DIR:-build}/bin/lockroom}
[[ -x $lockroom ]] || { echo "bench/run-acp.sh: $lockroom is missing; build it first (scripts/setup)" >&2; exit 1; }
tests/acp/run --only direct/turn-streams-text >/dev/null  # installs the SDK when needed, and checks the agent works
exec node bench/acp/bench_acp.js --lockroom "$(realpath "$lockroom")" "$@"
