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

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-2}

opts=()
if [[ ${1:-} == --quick ]]; then
  shift
  opts=(--first-runs 1 --runs 3)
fi
opts+=("$@")

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  if [[ $build_dir == "$root/build" ]]; then
    (cd "$root" && cmake --preset default >&2)
  else
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKROOM_BENCH=ON >&2
  fi
fi
cmake --build "$build_dir" --target lockroom-bench-workspace -j "$jobs" >&2
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
case $build_type in
  Release | RelWithDebInfo) ;;
  *) printf 'warning: %s is a %s build; numbers from an unoptimised build mean little\n' "$build_dir" "${build_type:-unset}" >&2 ;;
esac

echo "lockroom-bench-workspace ($build_type); $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
exec "$build_dir/bin/lockroom-bench-workspace" "${opts[@]}"
