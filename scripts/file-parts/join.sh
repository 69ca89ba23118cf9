#!/usr/bin/env bash
# Checks the parts that split.sh made and reassembles them.
#   join.sh --check LIST            checks the parts present next to LIST (<name>.sha256), says
#                                   which are still missing; exit 1 on a damaged part
#   join.sh LIST OUTPUT             needs every part: checks each, concatenates them in the list's
#                                   order, checks the whole file, then moves it to OUTPUT
# A part or a whole file whose SHA-256 differs from the list is refused by name (exit 1); OUTPUT
# is written only when everything matched. Parts are looked up in LIST's folder, or in
# --parts-dir DIR when given.
set -euo pipefail
CHECK=""
PARTS_DIR=""
ARGS=()
usage() { echo "usage: join.sh [--parts-dir DIR] --check LIST | join.sh [--parts-dir DIR] LIST OUTPUT" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --check) CHECK=1 ;;
    --parts-dir) PARTS_DIR=${2:-}; [ $# -ge 2 ] || usage; shift ;;
    -h|--help) usage ;;
    -*) echo "join.sh: unknown option $1" >&2; usage ;;
    *) ARGS+=("$1") ;;
  esac
  shift
done
if [ -n "$CHECK" ]; then [ ${#ARGS[@]} -eq 1 ] || usage; else [ ${#ARGS[@]} -eq 2 ] || usage; fi
LIST=${ARGS[0]}
[ -f "$LIST" ] || { echo "join.sh: no checksum list $LIST" >&2; exit 2; }
DIR=${PARTS_DIR:-$(dirname "$LIST")}

# The list: "<sha256>  <name>.partNN" lines in order, then "<sha256>  <name>" (the whole file).
PARTS=()
SUMS=()
WHOLE_SUM=""
WHOLE_NAME=""
while read -r sum name; do
  [ -z "${sum:-}" ] && continue
  if ! [[ "$sum" =~ ^[0-9a-f]{64}$ ]] || [ -z "${name:-}" ] || [[ "$name" == */* ]]; then
    echo "join.sh: $LIST: not a checksum line: $sum $name" >&2
    exit 2
  fi
  if [[ "$name" =~ \.part[0-9][0-9]$ ]]; then
    PARTS+=("$name")
    SUMS+=("$sum")
  else
    WHOLE_SUM=$sum
    WHOLE_NAME=$name
  fi
done < "$LIST"
if [ ${#PARTS[@]} -eq 0 ] || [ -z "$WHOLE_NAME" ]; then
  echo "join.sh: $LIST lists no parts or no whole file (it must come from split.sh)" >&2
  exit 2
fi
for i in "${!PARTS[@]}"; do
  if [ "${PARTS[$i]}" != "$(printf '%s.part%02d' "$WHOLE_NAME" "$i")" ]; then
    echo "join.sh: $LIST: part $i is named ${PARTS[$i]}, expected $(printf '%s.part%02d' "$WHOLE_NAME" "$i")" >&2
    exit 2
  fi
done

BAD=0
MISSING=()
for i in "${!PARTS[@]}"; do
  p="$DIR/${PARTS[$i]}"
  if [ ! -f "$p" ]; then
    MISSING+=("${PARTS[$i]}")
    continue
  fi
  got=$(sha256sum "$p" | cut -d' ' -f1)
  if [ "$got" != "${SUMS[$i]}" ]; then
    echo "join.sh: part ${PARTS[$i]} is damaged: SHA-256 $got, the list says ${SUMS[$i]}" >&2
    BAD=1
  fi
done
N=${#PARTS[@]}
if [ -n "$CHECK" ]; then
  echo "join.sh: $WHOLE_NAME: $((N - ${#MISSING[@]})) of $N part(s) present$([ $BAD -eq 0 ] && echo ", intact" || echo ", some damaged")"\
"${MISSING[*]:+; missing: ${MISSING[*]}}"
  exit $BAD
fi
[ $BAD -eq 0 ] || { echo "join.sh: refusing to reassemble $WHOLE_NAME: damaged part(s) above" >&2; exit 1; }
if [ ${#MISSING[@]} -gt 0 ]; then
  echo "join.sh: cannot reassemble $WHOLE_NAME: missing part(s) ${MISSING[*]} (expected in $DIR)" >&2
  exit 1
fi
OUTPUT=${ARGS[1]}
mkdir -p "$(dirname "$OUTPUT")"
TMP=$(mktemp "$(dirname "$OUTPUT")/.join.XXXXXX")
trap 'rm -f "$TMP"' EXIT
for i in "${!PARTS[@]}"; do cat "$DIR/${PARTS[$i]}"; done > "$TMP"
got=$(sha256sum "$TMP" | cut -d' ' -f1)
if [ "$got" != "$WHOLE_SUM" ]; then
  echo "join.sh: the reassembled $WHOLE_NAME has SHA-256 $got, the list says $WHOLE_SUM; not written" >&2
  exit 1
fi
mv "$TMP" "$OUTPUT"
trap - EXIT
echo "join.sh: $WHOLE_NAME reassembled from $N part(s) into $OUTPUT ($(stat -c %s "$OUTPUT") bytes, SHA-256 $got)"
