#!/usr/bin/env bash
# Egress proxy on loopback (issue 5's benchmark): 1,000 small requests and one 100 MB download,
# direct, through the host proxy engine driven from the host, and from inside a real guest
# (busybox wget through the in-guest proxy), in one run (bench/egress/egress_bench.cpp). Prints
# Markdown tables for docs/benchmarks/egress.md, with the load average next to them. The guest
# rows boot real QEMU; under TCG they take a few minutes.
#
# usage: bench/run-egress.sh [--quick] [BENCH OPTIONS...]
#   --quick          host rows only, 3 runs
#   BENCH OPTIONS    e.g. --runs 5 --requests 1000 --download-mb 100 --guest-requests 1000 --no-guest
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
  opts=(--runs 3 --no-guest)
fi
opts+=("$@")

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  if [[ $build_dir == "$root/build" ]]; then
    (cd "$root" && cmake --preset default >&2)
  else
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKROOM_BENCH=ON >&2
  fi
fi
cmake --build "$build_dir" --target lockroom-bench-egress -j "$jobs" >&2
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
case $build_type in
  Release | RelWithDebInfo) ;;
  *) printf 'warning: %s is a %s build; numbers from an unoptimised build mean little\n' "$build_dir" "${build_type:-unset}" >&2 ;;
esac

echo "lockroom-bench-egress ($build_type); $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
exec "$build_dir/bin/lockroom-bench-egress" "${opts[@]}"
