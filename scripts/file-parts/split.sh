#!/usr/bin/env bash
# Splits FILE into parts of at most PART_MIB MiB (default 60) in OUT_DIR, with a checksum list
# OUT_DIR/<name>.sha256 in sha256sum's format: one line per part, in order, then the whole file's
# line last. join.sh checks and reassembles them.
#   split.sh [--part-mib N] FILE OUT_DIR
# Parts are named <name>.part00, <name>.part01, ...; OUT_DIR must hold no parts of <name> yet.
set -euo pipefail
PART_MIB=60
usage() { echo "usage: split.sh [--part-mib N] FILE OUT_DIR   (N: 1..60, default 60)" >&2; exit 2; }
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --part-mib) PART_MIB=${2:-}; [ $# -ge 2 ] || usage; shift ;;
    -h|--help) usage ;;
    -*) echo "split.sh: unknown option $1" >&2; usage ;;
    *) ARGS+=("$1") ;;
  esac
  shift
done
[ ${#ARGS[@]} -eq 2 ] || usage
FILE=${ARGS[0]}
OUT=${ARGS[1]}
case "$PART_MIB" in
  ''|*[!0-9]*) echo "split.sh: --part-mib must be a whole number of MiB, got '$PART_MIB'" >&2; exit 2 ;;
esac
if [ "$PART_MIB" -lt 1 ] || [ "$PART_MIB" -gt 60 ]; then
  echo "split.sh: --part-mib must be 1..60, got $PART_MIB" >&2
  exit 2
fi
[ -f "$FILE" ] || { echo "split.sh: $FILE is not a file" >&2; exit 2; }
NAME=$(basename "$FILE")
mkdir -p "$OUT"
if compgen -G "$OUT/$NAME.part*" >/dev/null || [ -e "$OUT/$NAME.sha256" ]; then
  echo "split.sh: $OUT already holds parts or a checksum list of $NAME; use an empty folder" >&2
  exit 2
fi
SIZE=$(stat -c %s "$FILE")
PART_BYTES=$((PART_MIB * 1048576))
COUNT=$(( SIZE == 0 ? 1 : (SIZE + PART_BYTES - 1) / PART_BYTES ))
if [ "$COUNT" -gt 100 ]; then
  echo "split.sh: $FILE would make $COUNT parts; at most 100 (two-digit suffixes)" >&2
  exit 2
fi
split -b "$PART_BYTES" -d -a 2 "$FILE" "$OUT/$NAME.part"
[ "$SIZE" -eq 0 ] && : > "$OUT/$NAME.part00" # split writes nothing for an empty file
(cd "$OUT" && sha256sum "$NAME".part[0-9][0-9]) > "$OUT/$NAME.sha256.tmp"
WHOLE=$(sha256sum "$FILE" | cut -d' ' -f1)
echo "$WHOLE  $NAME" >> "$OUT/$NAME.sha256.tmp"
# The parts must add up to the file (a file that changed while it was split would not).
if [ "$(cat "$OUT/$NAME".part[0-9][0-9] | sha256sum | cut -d' ' -f1)" != "$WHOLE" ]; then
  rm -f "$OUT/$NAME".part[0-9][0-9] "$OUT/$NAME.sha256.tmp"
  echo "split.sh: the parts do not add up to $FILE (did it change while it was split?)" >&2
  exit 1
fi
mv "$OUT/$NAME.sha256.tmp" "$OUT/$NAME.sha256"
echo "split.sh: $NAME ($SIZE bytes) -> $COUNT part(s) of at most $PART_MIB MiB in $OUT; checksums: $NAME.sha256"
