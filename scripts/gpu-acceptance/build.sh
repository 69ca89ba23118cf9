#!/usr/bin/env bash
# Builds, here, what the GPU acceptance command (scripts/gpu-acceptance/run.sh) needs on the GPU
# machine, in three git-ignored folders that travel with the working tree in one call:
#   .spark-bundle/  the slim Spark set and the Java runtime every step uses (rebuilt only when missing,
#                   or with --all: it depends on Spark alone)
#   .spark-app/     the one jar, the examples and the GPU checks' reference (scripts/gpu-bundle/spark-slim.sh)
#   .gpu-accept/    the GPU checks jar (suite, benchmark, NCCL self-check), the C++ test gc_test
#                   (gzip'ed; nvcc here), COMMIT (the short hash they were built from)
# Then it checks that the three and the tracked files fit one upload (64 MiB).
#   bash scripts/gpu-acceptance/build.sh [--all]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ALL=""
for a in "$@"; do
  case "$a" in
    --all) ALL=1 ;;
    *) echo "build.sh: unknown argument $a (known: --all)" >&2; exit 2 ;;
  esac
done
ACCEPT="$ROOT/.gpu-accept"
LIMIT=$((64 * 1024 * 1024))
if [ -n "$ALL" ] || [ ! -f "$ROOT/.spark-bundle/SHA256SUMS" ]; then
  "$ROOT/scripts/gpu-bundle/spark-slim.sh"
else
  "$ROOT/scripts/gpu-bundle/spark-slim.sh" --app-only
fi
MVN=(mvn -B -q -o -f "$ROOT/pom.xml")
"${MVN[@]}" -pl spark-plugin/gpucoll-gpu-checks -am package -DskipTests
rm -rf "$ACCEPT"
mkdir -p "$ACCEPT"
cp "$ROOT"/spark-plugin/gpucoll-gpu-checks/target/gpucoll-gpu-checks-*[0-9T].jar "$ACCEPT/"
# The optional cuSOLVERMp binding (not in the one jar), which the GPU checks' classes link against.
cp "$ROOT"/spark-plugin/gpucoll-cusolvermp/target/gpucoll-cusolvermp-*[0-9T].jar "$ACCEPT/"
"$ROOT/scripts/gpu-bundle/cpp-programs.sh" "$ACCEPT" gc_test
cp "$ROOT/.spark-app/COMMIT" "$ACCEPT/COMMIT"
git -C "$ROOT" check-ignore -q "$ACCEPT" || { echo "build.sh: .gpu-accept is not git-ignored" >&2; exit 1; }

TRACKED=$(git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
CARRIED=$(du -scb "$ROOT/.spark-bundle" "$ROOT/.spark-app" "$ACCEPT" | tail -1 | cut -f1)
TOTAL=$((TRACKED + CARRIED))
printf 'upload: tracked files %.1f MiB + .spark-bundle, .spark-app, .gpu-accept %.1f MiB = %.1f MiB of 64\n' \
  "$(echo "$TRACKED / 1048576" | bc -l)" "$(echo "$CARRIED / 1048576" | bc -l)" "$(echo "$TOTAL / 1048576" | bc -l)"
if [ "$TOTAL" -ge "$LIMIT" ]; then
  echo "build.sh: the upload is over 64 MiB" >&2
  exit 1
fi
echo "commit $(cat "$ACCEPT/COMMIT" | tr '\n' ' '); on the GPU machine: bash scripts/gpu-acceptance/run.sh" \
  "(carry .spark-bundle .spark-app .gpu-accept)"
