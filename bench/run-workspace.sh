#!/usr/bin/env bash
# Workspace sync and review: lockroom's first sync into a fresh sandbox (cold and warm store)
# against tar through the same channel and `git clone --local`, incremental sync, and the review
# of 100 changed files, in one run (bench/workspace/workspace_bench.cpp). Prints Markdown tables
# for docs/benchmarks/workspace.md. Guests boot real QEMU; under TCG a run takes several minutes.
#
# usage: bench/run-workspace.sh [--quick] [BENCH OPTIONS...]
#   --quick          one first-sync run and three of the others
#   BENCH OPTIONS    e.g. --runs 5 --first-runs 3 --source DIR (default source: /usr/include)
# environment:
#   BUILD_DIR        build directory (default: build, configured with `cmake --preset default`)
#   JOBS             parallel build jobs (default: 2)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/common/preamble.sh"

opts=()
if [[ ${1:-} == --quick ]]; then
  shift
  opts=(--first-runs 1 --runs 3)
fi
opts+=("$@")

bench_build lockroom-bench-workspace
build_type=$(bench_build_type)

echo "lockroom-bench-workspace ($build_type); $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
exec "$build_dir/bin/lockroom-bench-workspace" "${opts[@]}"
