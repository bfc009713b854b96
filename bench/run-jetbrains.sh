#!/usr/bin/env bash
# The IntelliJ plugin's core benchmark (bench/jetbrains/): request round trips through the Java
# core (BenchCore.java) and, in the same run against the same lockroom, through the VS Code
# extension's core (bench_vscode_core.mjs); prints a Markdown table (medians, p90, ratios) and
# the machine's load before and after.
#   bench/run-jetbrains.sh [--runs N] [--warmup N]
# environment: BUILD_DIR (default build), LOCKROOM (a lockroom binary to measure instead),
#              NO_VSCODE=1 (the Java core alone, e.g. without node)
set -euo pipefail
cd "$(dirname "$0")/.."
lockroom=${LOCKROOM:-${BUILD_DIR:-build}/bin/lockroom}
[[ -x $lockroom ]] || { echo "bench/run-jetbrains.sh: $lockroom is missing; build it first (scripts/setup)" >&2; exit 1; }
lockroom=$(realpath "$lockroom")
jars=${LOCKROOM_JAVA_JARS:-/usr/share/java}

extensions/jetbrains/run --build >&2                     # generates the types, compiles the core
out=extensions/jetbrains/build/bench-classes
mkdir -p "$out"
javac --release 17 -d "$out" -cp "extensions/jetbrains/build/core-classes:$jars/gson.jar" bench/jetbrains/BenchCore.java
if [[ -z ${NO_VSCODE:-} ]]; then
  extensions/vscode/run --check >/dev/null               # installs the npm packages, generates the types
  (cd extensions/vscode && node_modules/.bin/tsc -p tsconfig.test.json)   # the core, compiled to out/
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
before=$(load)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
java -cp "$out:extensions/jetbrains/build/core-classes:$jars/gson.jar" BenchCore --lockroom "$lockroom" "$@" >>"$results"
[[ -z ${NO_VSCODE:-} ]] && node bench/jetbrains/bench_vscode_core.mjs --lockroom "$lockroom" "$@" >>"$results"
node bench/jetbrains/table.mjs <"$results"
echo "load average (1, 5, 15 min) before: $before, after: $(load) ($(nproc) CPUs)"
