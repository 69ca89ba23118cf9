#!/usr/bin/env bash
# Builds, here, what the GPU acceptance command (integration-tests/gpu/acceptance/run.sh) needs on the GPU
# machine, in three git-ignored folders that travel with the working tree in one upload:
#   .spark-bundle/  the slim Spark set and the Java runtime every step uses (rebuilt only when missing,
#                   or with --all: it depends on Spark alone)
#   .pyspark/       PySpark's Python side for the python step (integration-tests/gpu/bundle/pyspark-slim.sh;
#                   rebuilt only when missing or with --all: it depends on Spark alone)
#   .gpu-accept/    spark-app.tar.xz: .spark-app (the one jar, the examples, the GPU checks jar with the
#                   suite, benchmark, NCCL self-check and Spark GPU jobs, their reference, COMMIT;
#                   integration-tests/gpu/bundle/spark-slim.sh) with every jar stored, in one xz stream,
#                   which run.sh unpacks into .spark-app on the GPU machine (half the size of the jars
#                   as built); the cuSOLVERMp binding and cuSOLVERMp itself (its sm_90 code,
#                   integration-tests/gpu/bundle/cusolvermp-lib.sh); the C++ test gc_test (xz'ed; nvcc
#                   here); COMMIT (the short hash they were built from)
# .spark-app itself stays here and does not travel. Then it checks that the three and the tracked
# files fit one upload with room to spare (62.5 MiB counted this way; the GPU machine refused an
# upload counted at 63.6 MiB).
#   bash integration-tests/gpu/acceptance/build.sh [--all]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
ALL=""
for a in "$@"; do
  case "$a" in
    --all) ALL=1 ;;
    *) echo "build.sh: unknown argument $a (known: --all)" >&2; exit 2 ;;
  esac
done
ACCEPT="$ROOT/.gpu-accept"
LIMIT=$((125 * 1024 * 1024 / 2)) # 62.5 MiB
if [ -n "$ALL" ] || [ ! -f "$ROOT/.spark-bundle/SHA256SUMS" ]; then
  "$ROOT/integration-tests/gpu/bundle/spark-slim.sh"
else
  "$ROOT/integration-tests/gpu/bundle/spark-slim.sh" --app-only
fi
if [ -n "$ALL" ] || [ ! -f "$ROOT/.pyspark/SHA256SUMS" ]; then
  "$ROOT/integration-tests/gpu/bundle/pyspark-slim.sh"
fi
rm -rf "$ACCEPT"
mkdir -p "$ACCEPT"
# The optional cuSOLVERMp binding (not in the one jar), which the GPU checks' classes link against;
# spark-slim.sh built it with the GPU checks.
cp "$ROOT"/spark-plugin/gpucoll-cusolvermp/target/gpucoll-cusolvermp-*[0-9T].jar "$ACCEPT/"
"$ROOT/integration-tests/gpu/bundle/cusolvermp-lib.sh" "$ACCEPT" > /dev/null
"$ROOT/integration-tests/gpu/bundle/cpp-programs.sh" "$ACCEPT" gc_test
gunzip -c "$ACCEPT/gc_test.gz" | xz -9e > "$ACCEPT/gc_test.xz" && rm "$ACCEPT/gc_test.gz"
rm -f "$ACCEPT/correctness-matrix.txt" # run.sh reads the tracked one
cp "$ROOT/.spark-app/COMMIT" "$ACCEPT/COMMIT"
# .spark-app as one tar.xz of stored jars: deflated jars barely compress further, stored ones do.
STORED=$(mktemp -d /tmp/gpucoll-accept-app.XXXXXX)
trap 'rm -rf "$STORED"' EXIT
python3 "$ROOT/integration-tests/gpu/bundle/repack_jars.py" --keep-natives "$ROOT/.spark-app" "$STORED/.spark-app" > /dev/null
cp "$ROOT/.spark-app/COMMIT" "$STORED/.spark-app/"
tar -C "$STORED" -cf - .spark-app | xz -9 -T2 > "$ACCEPT/spark-app.tar.xz"
git -C "$ROOT" check-ignore -q "$ACCEPT" || { echo "build.sh: .gpu-accept is not git-ignored" >&2; exit 1; }

TRACKED=$(git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
mib() { echo "scale=2; $1 / 1048576" | bc; }
SIZES=""
for d in .spark-bundle .pyspark .gpu-accept; do
  SIZES="$SIZES $d $(mib "$(du -sb "$ROOT/$d" | cut -f1)")"
done
CARRIED=$(du -scb "$ROOT/.spark-bundle" "$ROOT/.pyspark" "$ACCEPT" | tail -1 | cut -f1)
TOTAL=$((TRACKED + CARRIED))
echo "upload: tracked files $(mib "$TRACKED") MiB +$SIZES MiB = $(mib "$TOTAL") MiB (at most 62.5)"
if [ "$TOTAL" -gt "$LIMIT" ]; then
  echo "build.sh: the upload is over 62.5 MiB" >&2
  exit 1
fi
echo "commit $(cat "$ACCEPT/COMMIT" | tr '\n' ' '); on the GPU machine: bash integration-tests/gpu/acceptance/run.sh" \
  "(carry .spark-bundle .pyspark .gpu-accept; not .spark-app, which run.sh unpacks from .gpu-accept)"
