#!/usr/bin/env bash
# Builds what a Spark run on the GPU machine (no Java there, 64 MiB per upload) needs, in two
# git-ignored folders that travel to the GPU machine (integration-tests/gpu/spark/run.sh says how):
#   .spark-bundle/  Spark's run-time jars (spark-core and its dependencies at the project's Spark
#                   version) without the jars spark-slim/drop-jars.txt names, Hadoop's classes cut to
#                   spark-slim/hadoop-packages.txt, other platforms' native libraries dropped,
#                   every jar rewritten stored (not deflated), plus a jlink'ed Java runtime with the
#                   modules Spark needs; one tar, xz-compressed, split into parts of at most
#                   SPARK_PART_MIB (default 56) MiB. Unpacked once per machine; changes only with Spark.
#   .spark-app/     our jars (plugin, GPU backend with the kernel fatbin, JavaCPP CUDA presets, the
#                   examples, the GPU checks with the Spark GPU jobs, the optional gpucoll-cudf module)
#                   and COMMIT; small, rebuilt with every code change. cuDF itself is not in it (docs/cudf-gpu.md).
# Called by integration-tests/gpu/bundle/build.sh --with-spark, or alone. Builds with `package`, never `install`.
# --app-only: rebuild .spark-app only (after a code change; .spark-bundle depends on Spark alone).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
APP_ONLY=""
for a in "$@"; do
  case "$a" in
    --app-only) APP_ONLY=1 ;;
    *) echo "spark-slim.sh: unknown argument $a (known: --app-only)" >&2; exit 2 ;;
  esac
done
SPARK_BUNDLE="$ROOT/.spark-bundle"
APP="$ROOT/.spark-app"
PART_MIB=${SPARK_PART_MIB:-56}
# Spark's launcher adds --add-modules=jdk.incubator.vector to every executor command line, and its
# classes, Hadoop's and Jetty's use these (found with jdeps --print-module-deps, then by running: Hadoop's
# UserGroupInformation, which every Spark JVM calls, needs jdk.security.auth's UnixLoginModule; the
# plugin's Python channel checks its peer with jdk.net's SO_PEERCRED).
SPARK_JDK_MODULES=java.base,java.compiler,java.desktop,java.instrument,java.logging,java.management,java.naming,\
java.net.http,java.rmi,java.scripting,java.security.jgss,java.security.sasl,java.sql,java.xml,jdk.incubator.vector,\
jdk.management,jdk.unsupported,jdk.crypto.ec,jdk.zipfs,jdk.security.auth,jdk.security.jgss,jdk.net

MVN=(mvn -B -q -o)
if ! mvn -B -q -o -f "$ROOT/integration-tests/gpu/bundle/spark-slim/pom.xml" dependency:resolve >/dev/null 2>&1; then
  MVN=(mvn -B -q) # something is not in ~/.m2 yet
fi
for tool in jlink python3 xz; do
  command -v "$tool" >/dev/null || { echo "spark-slim.sh: $tool not found" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/gpucoll-spark-slim.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mib() { echo "scale=1; $1 / 1048576" | bc; }

if [ -z "$APP_ONLY" ]; then # .spark-bundle: Spark's jars and the Java runtime
# ---- Spark's jars
"${MVN[@]}" -f "$ROOT/integration-tests/gpu/bundle/spark-slim/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$WORK/maven"
# Jars of features this run never enables (spark-slim/drop-jars.txt says why each), and jars whose
# classifier names another platform (they carry only that platform's natives).
DROPPED=0
while read -r pattern _; do
  case "$pattern" in ''|'#'*) continue ;; esac
  for f in "$WORK"/maven/$pattern; do
    [ -e "$f" ] && rm -f "$f" && DROPPED=$((DROPPED + 1))
  done
done < "$ROOT/integration-tests/gpu/bundle/spark-slim/drop-jars.txt"
rm -f "$WORK"/maven/*-{linux-aarch_64,linux-riscv64,osx-aarch_64,osx-x86_64,windows-x86_64}.jar
mkdir -p "$WORK/gpucoll-spark"
python3 "$ROOT/integration-tests/gpu/bundle/repack_jars.py" "$WORK/maven" "$WORK/gpucoll-spark/jars" \
  "$ROOT/integration-tests/gpu/bundle/spark-slim/hadoop-packages.txt" > "$WORK/repack.txt"

# ---- the Java runtime
jlink --add-modules "$SPARK_JDK_MODULES" --strip-debug --no-man-pages --no-header-files --compress=0 \
  --output "$WORK/gpucoll-spark/jre" 2>&1 | grep -v 'Using incubator modules' || true
strip --strip-unneeded "$WORK/gpucoll-spark/jre/lib/server/libjvm.so" 2>/dev/null || true
"$WORK/gpucoll-spark/jre/bin/java" -version 2>&1 | sed -n 1p

# ---- one tar.xz in parts
rm -rf "$SPARK_BUNDLE"
mkdir -p "$SPARK_BUNDLE"
tar -C "$WORK" -cf - gpucoll-spark | xz -9 -T2 | split -b "${PART_MIB}m" -d -a 1 - "$SPARK_BUNDLE/spark.tar.xz.part"
(cd "$SPARK_BUNDLE" && sha256sum spark.tar.xz.part* > SHA256SUMS)
UNPACKED=$(du -sb "$WORK/gpucoll-spark" | cut -f1)
echo "$UNPACKED" > "$SPARK_BUNDLE/UNPACKED_BYTES"
echo "Spark jars: $(ls "$WORK/gpucoll-spark/jars" | wc -l) ($DROPPED left out by drop-jars.txt, other platforms'"\
" jars too); unpacked with the runtime: $(mib "$UNPACKED") MiB"
grep -E 'hadoop-client' "$WORK/repack.txt"
fi

# ---- our jars: package, never install; copy-dependencies in the same reactor run, where our
# modules resolve to the jars just packaged. -Pcudf: the GPU checks' cuDF job and gpucoll-cudf (cuDF
# itself is provided: resolved into ~/.m2 to compile against, never copied here).
rm -rf "$APP"
mkdir -p "$APP"
"${MVN[@]}" -f "$ROOT/pom.xml" -Pcudf -pl spark-plugin/gpucoll-dist,examples,integration-tests/gpu -am package -DskipTests
# What a user deploys: the one jar (plugin, GPU backend, fatbin, JavaCPP CUDA presets) and the job
# (the examples; the GPU checks, whose jar holds the Spark GPU jobs and the acceptance's suite and benchmark);
# beside them the GPU checks' reference (codecs, reduction rules) that the job's checks use, and for a
# cuDF job the module jar that goes next to the user's cuDF.
cp "$ROOT"/spark-plugin/gpucoll-dist/target/gpucoll-dist_2.13-*[0-9T].jar \
  "$ROOT"/examples/target/gpucoll-examples_2.13-*[0-9T].jar \
  "$ROOT"/integration-tests/gpu/target/gpucoll-gpu-checks-*[0-9T].jar \
  "$ROOT"/spark-plugin/gpucoll-check-support/target/gpucoll-check-support-*[0-9T].jar \
  "$ROOT"/spark-plugin/gpucoll-cudf/target/gpucoll-cudf-*[0-9T].jar "$APP/"
git -C "$ROOT" rev-parse --short HEAD > "$APP/COMMIT" 2>/dev/null || echo unknown > "$APP/COMMIT"
if ! git -C "$ROOT" diff --quiet HEAD -- spark-plugin native-kernels examples integration-tests/gpu 2>/dev/null; then
  echo "+uncommitted changes" >> "$APP/COMMIT"
fi

for d in "$SPARK_BUNDLE" "$APP"; do
  if ! git -C "$ROOT" check-ignore -q "$d"; then
    echo "spark-slim.sh: $d is not git-ignored; it must be, to travel as an upload of its own" >&2
    exit 1
  fi
done
if [ ! -d "$SPARK_BUNDLE" ]; then
  echo "spark-slim.sh: no .spark-bundle yet: run spark-slim.sh without --app-only once" >&2
  exit 1
fi
ls -l "$SPARK_BUNDLE"
echo ".spark-bundle: $(mib "$(du -sb "$SPARK_BUNDLE" | cut -f1)") MiB; .spark-app: $(mib "$(du -sb "$APP" | cut -f1)") MiB"
for p in "$SPARK_BUNDLE"/spark.tar.xz.part*; do
  if [ "$(stat -c %s "$p")" -gt $((PART_MIB * 1048576)) ]; then
    echo "spark-slim.sh: $p is over $PART_MIB MiB" >&2
    exit 1
  fi
done
