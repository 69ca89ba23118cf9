#!/usr/bin/env bash
# Tests split.sh and join.sh on small files (about 1 s): round trip, a damaged part, a missing part,
# a damaged list, an empty file, bad arguments. Prints "N passed, N failed"; exit 1 on a failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
expect() { # expect RC PATTERN -- command...: exit status RC and PATTERN in its output
  local want=$1 pattern=$2; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then bad "$* exited $rc, expected $want: $out"
  elif [ -n "$pattern" ] && ! grep -q -- "$pattern" <<< "$out"; then bad "$* did not say '$pattern': $out"
  else ok; fi
}

head -c $((2 * 1048576 + 12345)) /dev/urandom > "$T/data.bin"
expect 0 "3 part(s) of at most 1 MiB" -- "$HERE/split.sh" --part-mib 1 "$T/data.bin" "$T/parts"
[ "$(ls "$T/parts" | wc -l)" -eq 4 ] && ok || bad "expected 3 parts and a list: $(ls "$T/parts")"
[ "$(stat -c %s "$T/parts/data.bin.part00")" -eq 1048576 ] && ok || bad "part00 is not 1 MiB"
expect 2 "already holds parts" -- "$HERE/split.sh" --part-mib 1 "$T/data.bin" "$T/parts"
expect 0 "3 of 3 part(s) present, intact" -- "$HERE/join.sh" --check "$T/parts/data.bin.sha256"
expect 0 "reassembled from 3 part(s)" -- "$HERE/join.sh" "$T/parts/data.bin.sha256" "$T/out/data.bin"
cmp -s "$T/data.bin" "$T/out/data.bin" && ok || bad "the reassembled file differs"

# Parts arriving one by one in another folder: --check names the missing ones.
mkdir -p "$T/arrive"
cp "$T/parts/data.bin.sha256" "$T/parts/data.bin.part01" "$T/arrive/"
expect 0 "1 of 3 part(s) present, intact; missing: data.bin.part00 data.bin.part02" -- \
  "$HERE/join.sh" --check "$T/arrive/data.bin.sha256"
expect 1 "missing part(s) data.bin.part00 data.bin.part02" -- "$HERE/join.sh" "$T/arrive/data.bin.sha256" "$T/arrive/x"
[ ! -e "$T/arrive/x" ] && ok || bad "an output was written with parts missing"
expect 0 "reassembled" -- "$HERE/join.sh" --parts-dir "$T/parts" "$T/arrive/data.bin.sha256" "$T/arrive/y"

# A damaged part is refused by name, with or without --check, and nothing is written.
cp -r "$T/parts" "$T/damaged"
printf 'X' | dd of="$T/damaged/data.bin.part02" bs=1 seek=100 conv=notrunc status=none
expect 1 "part data.bin.part02 is damaged" -- "$HERE/join.sh" --check "$T/damaged/data.bin.sha256"
expect 1 "part data.bin.part02 is damaged" -- "$HERE/join.sh" "$T/damaged/data.bin.sha256" "$T/damaged/out"
[ ! -e "$T/damaged/out" ] && ok || bad "an output was written from a damaged part"

# Parts that are each intact but listed with a wrong whole-file sum: refused, nothing written.
sed -i '$s/^[0-9a-f]\{64\}/'"$(printf '0%.0s' $(seq 64))"'/' "$T/damaged/data.bin.sha256"
cp "$T/parts/data.bin.part02" "$T/damaged/"
expect 1 "the reassembled data.bin has SHA-256" -- "$HERE/join.sh" "$T/damaged/data.bin.sha256" "$T/damaged/out"
[ ! -e "$T/damaged/out" ] && ! ls -A "$T/damaged" | grep -q '^\.join' && ok || bad "a wrong whole file was written (or its temporary left)"

# A list not made by split.sh.
echo "nonsense" > "$T/list.sha256"
expect 2 "not a checksum line" -- "$HERE/join.sh" --check "$T/list.sha256"

# An empty file, and bad arguments.
: > "$T/empty"
expect 0 "1 part(s)" -- "$HERE/split.sh" "$T/empty" "$T/eparts"
expect 0 "reassembled from 1 part(s)" -- "$HERE/join.sh" "$T/eparts/empty.sha256" "$T/eout"
[ -f "$T/eout" ] && [ ! -s "$T/eout" ] && ok || bad "the empty file did not come back empty"
expect 2 "must be 1..60" -- "$HERE/split.sh" --part-mib 61 "$T/data.bin" "$T/p61"
expect 2 "whole number" -- "$HERE/split.sh" --part-mib 1.5 "$T/data.bin" "$T/p15"
expect 2 "is not a file" -- "$HERE/split.sh" "$T/nothing" "$T/p0"
expect 2 "no checksum list" -- "$HERE/join.sh" --check "$T/nothing.sha256"

echo "file-parts: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
