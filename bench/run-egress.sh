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

# shellcheck source-path=SCRIPTDIR source=common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/common/preamble.sh"

opts=()
if [[ ${1:-} == --quick ]]; then
  shift
  opts=(--runs 3 --no-guest)
fi
opts+=("$@")

bench_build lockroom-bench-egress
build_type=$(bench_build_type)

echo "lockroom-bench-egress ($build_type); $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
exec "$build_dir/bin/lockroom-bench-egress" "${opts[@]}"
