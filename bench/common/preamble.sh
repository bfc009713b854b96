# shellcheck shell=bash
# The part every bench/run-*.sh shares, sourced at its top: where the repository and the build
# directory are, configuring and building the script's targets, and which build type it measures.
#
# After `source bench/common/preamble.sh`:
#   root                   the repository
#   build_dir              $BUILD_DIR, default $root/build
#   jobs                   $JOBS, default 2
#   bench_build TARGET...  configures build_dir when it never was (build/: `cmake --preset default`;
#                          any other: Ninja, RelWithDebInfo, benchmarks on), turns the benchmarks on
#                          in a build dir configured without them, then builds the targets
#   bench_build_type       prints build_dir's CMAKE_BUILD_TYPE (empty when it has no cache) and
#                          warns on stderr when that is not an optimised build
# Everything the preamble prints goes to stderr: stdout is the script's table.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-2}

# The value of one entry of build_dir's CMake cache ("" when there is no cache or no entry).
bench_cache_value() {
  sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" 2>/dev/null || true
}

bench_build() {
  if [[ ! -f $build_dir/CMakeCache.txt ]]; then
    if [[ $build_dir == "$root/build" ]]; then
      (cd "$root" && cmake --preset default >&2)
    else
      cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKROOM_BENCH=ON >&2
    fi
  elif [[ $(bench_cache_value LOCKROOM_BENCH) == OFF ]]; then
    printf 'note: %s was configured without the benchmarks; turning LOCKROOM_BENCH on there\n' "$build_dir" >&2
    cmake -S "$root" -B "$build_dir" -DLOCKROOM_BENCH=ON >&2
  fi
  cmake --build "$build_dir" --target "$@" -j "$jobs" >&2
}

bench_build_type() {
  local build_type
  build_type=$(bench_cache_value CMAKE_BUILD_TYPE)
  case $build_type in
    Release | RelWithDebInfo) ;;
    *) printf "warning: %s is a '%s' build; numbers from an unoptimised build mean little\n" "$build_dir" "${build_type:-unset}" >&2 ;;
  esac
  printf '%s\n' "$build_type"
}
