#!/usr/bin/env bash
# The soak (bench/soak/soak.mjs): one `lockroom serve --stdio --standalone` keeps N sandboxes with
# 4 streaming processes each for M minutes under random signals, cancellations, destroys and
# re-creates, and reviews/applies/discards on host workspaces; samples lockroom's RSS and
# descriptors once a second and checks at the end: no growth, exactly one process/exited per
# process, no orphan QEMU, host workspaces equal to what the applies answered. Builds nothing.
#
# usage: bench/run-soak.sh [--lockroom BIN] [--minutes M] [--sandboxes N] [--out DIR] [SOAK OPTIONS...]
#   --lockroom BIN   the lockroom to soak (default: $BUILD_DIR/bin/lockroom, BUILD_DIR default build);
#                    lockroom-agent must be next to it. Copy both somewhere else first when the
#                    build directory may be rebuilt during the run.
#   --minutes M      how long (default 10)
#   --sandboxes N    sandboxes kept alive (default 20)
#   --out DIR        where the results go (default: a new folder under $TMPDIR): summary.md,
#                    summary.json, samples.csv, events.jsonl, lockroom.log, soak.svg, soak.png,
#                    and the host repositories (repos/) and lockroom's state dir (state/)
#   SOAK OPTIONS     passed on: --memory-mib (256), --workspace-share (0.5), --seed, --warmup-s
# The guest image and templates come from the user's normal lockroom cache; lockroom's state dir is
# DIR/state, so every QEMU of the soak names it. Exits 1 when a check failed. The workspace stores
# of the soak's repositories stay in the cache: `lockroom workspace prune` removes them once the
# repositories are deleted. The PNG needs a chromium (Debian's `chromium`, or $CHROMIUM).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

lockroom=${BUILD_DIR:-$root/build}/bin/lockroom
minutes=10
sandboxes=20
out=
rest=()
while (($#)); do
  case $1 in
    --lockroom) lockroom=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --sandboxes) sandboxes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) rest+=("$1"); shift ;;
  esac
done
[[ -x $lockroom ]] || { echo "bench/run-soak.sh: $lockroom is missing; build it first (scripts/setup)" >&2; exit 1; }
[[ -x $(dirname "$lockroom")/lockroom-agent ]] || { echo "bench/run-soak.sh: lockroom-agent is not next to $lockroom" >&2; exit 1; }
command -v node >/dev/null || { echo "bench/run-soak.sh: needs node (20 or newer)" >&2; exit 1; }
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/lockroom-soak-XXXXXX")
mkdir -p "$out"

echo "lockroom soak: $minutes min, $sandboxes sandboxes; $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); results in $out" >&2
exec node "$root/bench/soak/soak.mjs" --lockroom "$(realpath "$lockroom")" --minutes "$minutes" --sandboxes "$sandboxes" --out "$(realpath "$out")" "${rest[@]}"
