#!/usr/bin/env bash
# Builds .gpu-bundle/ (git-ignored): everything the GPU machine needs to run the GPU suite and
# benchmark without Java installed there:
#   jre/   a jlink'ed Java 17 runtime from this machine's JDK
#   lib/   gpucoll api/core/cuda jars, the native-kernels jar (with the fatbin), the GPU checks jar
#          (gpucoll-gpu-checks: suite, benchmark, multi-GPU mains), JavaCPP + CUDA presets (linux-x86_64)
#   bin/   gc_bench, gc_test (gzip'ed: each links every kernel's SASS) with correctness-matrix.txt,
#          the shipped fatbin (gzip'ed); run.sh unpacks them
#   run.sh the one command to run there (copied from integration-tests/gpu/bundle/run.sh)
# It travels to the GPU machine next to the repository (64 MiB per upload, the repository included):
# the bundle must stay under 50 MiB (55 MiB with --with-cusolvermp: the tracked tree is under 9 MiB).
# --with-spark: also .spark-bundle/ and .spark-app/ for integration-tests/gpu/spark/run.sh (see spark-slim.sh).
# --with-cusolvermp: also cusolvermp/libcusolverMp.so.0.xz (cusolvermp-lib.sh) for CuSolverMpCheck.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
WITH_SPARK=""
WITH_CUSOLVERMP=""
for a in "$@"; do
  case "$a" in
    --with-spark) WITH_SPARK=1 ;;
    --with-cusolvermp) WITH_CUSOLVERMP=1 ;;
    *) echo "build.sh: unknown argument $a (known: --with-spark, --with-cusolvermp)" >&2; exit 2 ;;
  esac
done
BUNDLE="$ROOT/.gpu-bundle"
LIMIT_BYTES=$((50 * 1024 * 1024))
# Offline first (the dependencies are normally in ~/.m2 already); online when something is missing.
MVN=(mvn -B -q -o -f "$ROOT/pom.xml")
if ! mvn -B -q -o -f "$ROOT/pom.xml" -pl integration-tests/gpu -am dependency:resolve >/dev/null 2>&1; then
  MVN=(mvn -B -q -f "$ROOT/pom.xml")
fi

if ! command -v jlink >/dev/null; then
  echo "build.sh: jlink not found: a JDK 17 with jmods is needed" >&2
  exit 1
fi
JAVA_HOME_FOR_JLINK=$(dirname "$(dirname "$(readlink -f "$(command -v jlink)")")")
if [ ! -d "$JAVA_HOME_FOR_JLINK/jmods" ]; then
  echo "build.sh: $JAVA_HOME_FOR_JLINK has no jmods/: install the full JDK (openjdk-17-jdk)" >&2
  exit 1
fi

# Our modules (the native-kernels build needs nvcc; it fails with a clear message without it), packaged
# in one reactor build that also copies every runtime jar into lib/: nothing goes to ~/.m2.
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/lib"
"${MVN[@]}" -pl integration-tests/gpu -am package dependency:copy-dependencies -DskipTests \
  -DincludeScope=runtime -DoutputDirectory="$BUNDLE/lib"
cp "$ROOT"/integration-tests/gpu/target/gpucoll-gpu-checks-*[0-9T].jar "$BUNDLE/lib/"
if ! unzip -l "$BUNDLE"/lib/gpucoll-native-kernels-*.jar | grep -q 'dev/gpucoll/native/gpucoll_kernels.fatbin'; then
  echo "build.sh: the native-kernels jar holds no dev/gpucoll/native/gpucoll_kernels.fatbin" >&2
  exit 1
fi

jlink --add-modules java.base,jdk.unsupported,java.management,java.logging \
  --strip-debug --no-man-pages --no-header-files --compress=2 --output "$BUNDLE/jre"
# jlink keeps libjvm.so's symbol tables (24 MB); stripping them saves ~4 MB and changes no code.
strip --strip-unneeded "$BUNDLE/jre/lib/server/libjvm.so" 2>/dev/null || true

# The C++ benchmark (native-kernels/test/gc_bench.cu), for the C++ launch-cost number of the same run,
# and the shipped fatbin it loads with cuModuleLoadData (gzip'ed: 9 MB of SASS packs to a quarter);
# the C++ correctness test gc_test with the correctness matrix beside it (cpp-programs.sh).
mkdir -p "$BUNDLE/bin"
unzip -p "$BUNDLE"/lib/gpucoll-native-kernels-*.jar dev/gpucoll/native/gpucoll_kernels.fatbin \
  | gzip -9 > "$BUNDLE/bin/gpucoll_kernels.fatbin.gz"
if command -v nvcc >/dev/null; then
  "$ROOT/integration-tests/gpu/bundle/cpp-programs.sh" "$BUNDLE/bin" gc_bench gc_test
else
  echo "build.sh: no nvcc: the bundle has no C++ launcher and no gc_test" >&2
fi

# The GPU machine may have no unzip: record here which optional mains the bundle holds.
unzip -l "$BUNDLE"/lib/gpucoll-gpu-checks-*.jar | awk '{print $4}' | grep -E '(Check|Suite|Bench|Rank)\.class$' \
  | sed 's/\.class$//; s#/#.#g' > "$BUNDLE/MAINS"

cp "$ROOT/integration-tests/gpu/bundle/run.sh" "$BUNDLE/run.sh"
chmod +x "$BUNDLE/run.sh"
git -C "$ROOT" rev-parse HEAD > "$BUNDLE/COMMIT" 2>/dev/null || echo unknown > "$BUNDLE/COMMIT"
if ! git -C "$ROOT" diff --quiet HEAD -- spark-plugin native-kernels 2>/dev/null; then
  echo "+uncommitted changes" >> "$BUNDLE/COMMIT"
fi

if [ -n "$WITH_CUSOLVERMP" ]; then
  "$ROOT/integration-tests/gpu/bundle/cusolvermp-lib.sh" "$BUNDLE/cusolvermp"
  LIMIT_BYTES=$((55 * 1024 * 1024))
fi

"$BUNDLE/jre/bin/java" -version 2>&1 | sed -n 1p
SIZE=$(du -sb "$BUNDLE" | cut -f1)
printf 'bundle %s: %d bytes (%.1f MiB), limit %d MiB\n' "$BUNDLE" "$SIZE" "$(echo "$SIZE / 1048576" | bc -l)" \
  $((LIMIT_BYTES / 1048576))
ls -la "$BUNDLE/lib"
if [ "$SIZE" -ge "$LIMIT_BYTES" ]; then
  echo "build.sh: bundle is over $((LIMIT_BYTES / 1048576)) MiB" >&2
  exit 1
fi
if ! git -C "$ROOT" check-ignore -q "$BUNDLE"; then
  echo "build.sh: .gpu-bundle is not git-ignored; it must be, to travel as a carried path" >&2
  exit 1
fi
if [ -n "$WITH_SPARK" ]; then
  "$ROOT/integration-tests/gpu/bundle/spark-slim.sh"
fi
