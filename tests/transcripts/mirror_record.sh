#!/bin/sh
# mirror-record: `lockroom serve --input-mirror FILE` records the raw input exactly as read, and
# replaying the recording gives the same answers.
#   mirror_record.sh LOCKROOM INPUT WORK_DIR
# The input goes in as several writes (split inside a header and inside a body), so the server
# reads it in pieces; the mirror must still be the input byte for byte. Then the mirror is fed
# to a fresh server in one go, and its stdout must equal the live session's.
set -eu
lockroom=$1
input=$2
work=$3
rm -rf "$work"
mkdir -p "$work"

size=$(wc -c < "$input")
{
  head -c 10 "$input"; sleep 0.2
  head -c 200 "$input" | tail -c +11; sleep 0.2
  tail -c +201 "$input"
} | "$lockroom" serve --stdio --test-mode --input-mirror "$work/mirror.in" > "$work/live.out" 2> "$work/live.err" || {
  echo "the live session failed (exit $?):"; cat "$work/live.err"; exit 1; }

if ! cmp "$input" "$work/mirror.in"; then
  echo "the mirror is not the input ($size bytes sent, $(wc -c < "$work/mirror.in") recorded)"
  exit 1
fi
grep -q "copying the raw input to" "$work/live.err" || { echo "no log line names the mirror"; cat "$work/live.err"; exit 1; }

"$lockroom" serve --stdio --test-mode < "$work/mirror.in" > "$work/replay.out" 2> "$work/replay.err" || {
  echo "the replay failed (exit $?):"; cat "$work/replay.err"; exit 1; }
if ! cmp "$work/live.out" "$work/replay.out"; then
  echo "the replay answered differently:"; diff "$work/live.out" "$work/replay.out" || true
  exit 1
fi
# The answers are not empty: the session really ran.
grep -q '"id":5,"result":null' "$work/live.out" || { echo "the live session did not answer shutdown"; exit 1; }

# A mirror that cannot be written stops the server from starting, saying why.
if "$lockroom" serve --stdio --test-mode --input-mirror "$work/no/such/dir/m.in" < /dev/null > /dev/null 2> "$work/bad.err"; then
  echo "serve started with an unwritable mirror"; exit 1
fi
grep -q "cannot write the input mirror" "$work/bad.err" || { echo "unexpected error:"; cat "$work/bad.err"; exit 1; }
echo "mirror-record: ok ($size bytes)"
