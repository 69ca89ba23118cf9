#!/usr/bin/env bash
# The user examples (training, moe, linalg by default; $EXAMPLES picks others: lu, cholesky,
# linalg-bench) on a machine without Maven or a JDK, such as the GPU machine: Spark from the slim set that integration-tests/gpu/spark/run.sh unpacks (--unpack-only), our code
# from .spark-app (the one jar and the examples jar). Each example checks itself against the same
# computation in one process and prints its time split and path report.
#   bash integration-tests/gpu/spark/examples.sh [example options, e.g. --master local[2] --ranks 2]
#   EXAMPLES="lu cholesky" bash integration-tests/gpu/spark/examples.sh --kernels gpu --n 4096 --block 128
#   EXAMPLES=linalg-bench bash integration-tests/gpu/spark/examples.sh --kernels gpu --sizes 2048,4096 --block 128
# (linalg-bench's JSON record comes back as linalg-<date>-<commit>.json).
# With no options each example runs as it does by default: a Spark local-cluster, one executor JVM
# per rank (4), started from the slim set's Java through a scratch Spark home made here.
# cuBLAS for the linalg example's local GEMMs: NVIDIA's libcublas from the system, or from the
# Python package nvidia-cublas when one is installed (its lib folder is put on LD_LIBRARY_PATH); the
# same for cuSOLVER (nvidia-cusolver), which lu, cholesky and linalg-bench use with --kernels gpu.
# Logs: $OUT when set, else /tmp/gpucoll-examples-out.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
SPARK_SLIM=${SPARK_SLIM:-/tmp/gpucoll-spark}
LOGS=${OUT:-/tmp/gpucoll-examples-out}
mkdir -p "$LOGS"
JAVA="$SPARK_SLIM/jre/bin/java"
if [ ! -x "$JAVA" ] || ! ls "$ROOT"/.spark-app/gpucoll-dist_2.13-*.jar >/dev/null 2>&1; then
  echo "examples.sh: needs the unpacked Spark set at $SPARK_SLIM (integration-tests/gpu/spark/run.sh --unpack-only)" \
    "and .spark-app (integration-tests/gpu/bundle/spark-slim.sh --app-only)" >&2
  exit 2
fi
read -r -a JFLAGS <<< "$(sed -n 's:.*<spark.jvm.flags>\(.*\)</spark.jvm.flags>.*:\1:p' "$ROOT/pom.xml")"
CP="$SPARK_SLIM/jars/*:$(ls "$ROOT"/.spark-app/*.jar | paste -sd: -)"
CUBLAS=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$CUBLAS" ] && [ -d "$CUBLAS" ] && export LD_LIBRARY_PATH="$CUBLAS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUSOLVER=$(python3 -c 'import nvidia.cusolver, os; print(os.path.join(list(nvidia.cusolver.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$CUSOLVER" ] && [ -d "$CUSOLVER" ] && export LD_LIBRARY_PATH="$CUSOLVER${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared machines
# local-cluster launches executor JVMs the way a Worker does: with $JAVA_HOME/bin/java (there is no
# other Java on the GPU machine) from a Spark home whose jars/ LocalCluster fills with links to this
# class path; both variables must be set before the JVM starts.
SCRATCH_HOME=$(mktemp -d /tmp/gpucoll-examples-home.XXXXXX)
trap 'rm -rf "$SCRATCH_HOME"' EXIT
export JAVA_HOME="$SPARK_SLIM/jre" SPARK_HOME="$SCRATCH_HOME" SPARK_SCALA_VERSION=2.13
RC=0
COMMIT=$(head -1 "$ROOT/.spark-app/COMMIT" 2>/dev/null || echo unknown)
for ex in ${EXAMPLES:-training moe linalg}; do
  extra=()
  case $ex in
    training) main=dev.gpucoll.examples.training.DigitsTraining ;;
    moe) main=dev.gpucoll.examples.moe.MoeAllToAll ;;
    linalg) main=dev.gpucoll.examples.linalg.SummaPowerIteration ;;
    lu) main=dev.gpucoll.examples.linalg.DistributedLu ;;
    cholesky) main=dev.gpucoll.examples.linalg.DistributedCholesky ;;
    linalg-bench) main=dev.gpucoll.examples.linalg.FactorizationBenchmark
      extra=(--commit "$COMMIT" --out "$LOGS/linalg-$(date -u +%F)-$COMMIT.json") ;;
    *) echo "examples.sh: unknown example $ex (known: training moe linalg lu cholesky linalg-bench)" >&2; exit 2 ;;
  esac
  echo "== $ex ($main $* ${extra[*]})"
  "$JAVA" "${JFLAGS[@]}" -Xmx8g -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache \
    "-Dlog4j2.configurationFile=file:$ROOT/conf/log4j2.properties" -cp "$CP" "$main" "$@" ${extra[@]+"${extra[@]}"} \
    > "$LOGS/example-$ex.log" 2>&1
  rc=$?
  grep -v -E '^[0-9]{2}/[0-9]{2}/[0-9]{2} [0-9:]+ (INFO|WARN)' "$LOGS/example-$ex.log" | tail -25
  echo "== $ex: exit $rc"
  [ $rc -ne 0 ] && RC=1
done
exit $RC
