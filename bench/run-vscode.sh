#!/usr/bin/env bash
# The VS Code extension benchmark (bench/vscode/bench_vscode.mjs): the extension's core modules
# against the real lockroom, next to `lockroom run` and `git status`, in one run; prints a table.
#   bench/run-vscode.sh [--runs N]
# environment: BUILD_DIR (default build), LOCKROOM (a lockroom binary to measure instead)
set -euo pipefail
cd "$(dirname "$0")/.."
lockroom=${LOCKROOM:-${BUILD_DIR:-build}/bin/lockroom}
[[ -x $lockroom ]] || { echo "bench/run-vscode.sh: $lockroom is missing; build it first (scripts/setup)" >&2; exit 1; }
extensions/vscode/run --check >/dev/null                  # installs the npm packages, generates the types
(cd extensions/vscode && node_modules/.bin/tsc -p tsconfig.test.json)   # the core, compiled to out/
exec node bench/vscode/bench_vscode.mjs --lockroom "$(realpath "$lockroom")" "$@"
