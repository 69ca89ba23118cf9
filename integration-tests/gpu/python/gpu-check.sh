#!/usr/bin/env bash
# The PySpark GPU check, as a user deploys a Python job: a Spark standalone cluster (a Master and one
# Worker given GPU 0 as its resource, the way integration-tests/gpu/spark/run.sh starts it), and
# integration-tests/gpu/python/gpu_job.py submitted to it with the one jar on --jars, the package gpucoll on
# --py-files and the plugin on, twice:
#   --ranks 1   one barrier task with the whole GPU (task gpu amount 1)
#   --ranks 2   two barrier tasks sharing the GPU in one executor of 2 cores (task gpu amount 0.5)
# each with --out "$OUT/python-<ranks>" --commit <commit>. Exit 0 only when both runs exit 0.
# With --hosts N instead: N Workers, each a host of its own simulated on this machine and given GPU 0
# (integration-tests/gpu/spark/cluster.sh), and the job submitted once with --ranks N --hosts (one task per
# executor, task gpu amount 1): the group spans hosts, so every collective runs on NCCL in the Python
# processes; the job also trains DDP on "gpucoll" beside DDP on NCCL and kills a rank mid-call
# (--out "$OUT/python-hosts<N>").
# The GPU acceptance command's python step (integration-tests/gpu/acceptance/run.sh); on the GPU machine (no
# Java, no PySpark there), from the repository root, with .spark-bundle, .pyspark and our jars in
# .spark-app:
#   bash integration-tests/gpu/python/gpu-check.sh [--commit C] [--hosts N]
# The slim Spark set is unpacked by integration-tests/gpu/spark/run.sh --unpack-only, .pyspark (PySpark's Python
# side, integration-tests/gpu/bundle/pyspark-slim.sh) into its python/lib, where Spark puts pyspark.zip and py4j
# on the Python path of the driver and of every Python worker.
# Environment:
#   GPUCOLL_PYTHON   the Python of the driver and the workers (PYSPARK_PYTHON, PYSPARK_DRIVER_PYTHON);
#                    default /opt/torch/.venv/bin/python (the GPU machine's: torch, CuPy, NumPy)
#   GPUCOLL_GPU_JOB  another job file with the same arguments, for testing the wiring on a machine
#                    without a GPU (the Worker's discovery script names GPU 0 without asking the GPU)
#   OUT              where the results go (default /tmp/gpucoll-python-out): python-<n>/ (the job's
#                    --out), python-<n>.log (spark-submit's output: the driver, the job's stdout and
#                    stderr), python-logs.tar.gz (Master, Worker, executor logs with the Python
#                    workers' stderr, the event logs)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/gpucoll-python-out}
PY=${GPUCOLL_PYTHON:-/opt/torch/.venv/bin/python}
JOB=${GPUCOLL_GPU_JOB:-integration-tests/gpu/python/gpu_job.py}
SPARK_SLIM=${SPARK_SLIM:-/tmp/gpucoll-spark}
APP="$ROOT/.spark-app"
COMMIT=""
HOSTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --commit) COMMIT=${2:?--commit needs a commit}; shift ;;
    --hosts) HOSTS=${2:?--hosts needs a number}; shift ;;
    *) echo "gpu-check.sh: unknown argument $1 (known: --commit C, --hosts N)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
[ -f "$JOB" ] || { echo "gpu-check.sh: no job $JOB" >&2; exit 2; }
[ -x "$PY" ] || { echo "gpu-check.sh: no Python at $PY (set GPUCOLL_PYTHON)" >&2; exit 2; }
DIST_JAR=$(ls "$APP"/gpucoll-dist_2.13-*.jar 2>/dev/null | head -1)
[ -n "$DIST_JAR" ] || { echo "gpu-check.sh: no one jar in .spark-app (integration-tests/gpu/bundle/spark-slim.sh builds it)" >&2; exit 2; }
[ -n "$COMMIT" ] || COMMIT=$(head -1 "$APP/COMMIT" 2>/dev/null || echo unknown)

# ---- the slim Spark set, then PySpark's Python side in its python/lib
bash integration-tests/gpu/spark/run.sh --unpack-only || exit 2
PYSPARK="$ROOT/.pyspark"
[ -f "$PYSPARK/SHA256SUMS" ] || { echo "gpu-check.sh: no .pyspark (integration-tests/gpu/bundle/pyspark-slim.sh builds it)" >&2; exit 2; }
if ! cmp -s "$PYSPARK/SHA256SUMS" "$SPARK_SLIM/python/.sha256sums"; then
  (cd "$PYSPARK" && sha256sum -c --quiet SHA256SUMS) || { echo "gpu-check.sh: .pyspark is damaged" >&2; exit 2; }
  rm -rf "$SPARK_SLIM/python"
  xz -dc "$PYSPARK/pyspark.tar.xz" | tar -x -C "$SPARK_SLIM" || { echo "gpu-check.sh: unpacking .pyspark failed" >&2; exit 2; }
  cp "$PYSPARK/SHA256SUMS" "$SPARK_SLIM/python/.sha256sums"
fi
export PYSPARK_PYTHON="$PY" PYSPARK_DRIVER_PYTHON="$PY"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on these machines
echo "== PySpark $(cat "$PYSPARK/VERSION") ($(ls "$SPARK_SLIM/python/lib" | tr '\n' ' ')), $("$PY" --version 2>&1) at $PY," \
  "job $JOB, commit $COMMIT"
RUN=$(mktemp -d /tmp/gpucoll-python-run.XXXXXX)
mkdir -p "$RUN"/{events,local,logs}
export SPARK_LOCAL_DIRS="$RUN/local"
# JAVA, JFLAGS, JAVA_HOME, SPARK_HOME; cluster_start, cluster_stop
source "$ROOT/integration-tests/gpu/spark/cluster.sh"
"$JAVA" -version 2>&1 | sed -n 1p
LOG4J="-Dlog4j2.configurationFile=file:$ROOT/conf/log4j2.properties"

# The package as --py-files takes it: gpucoll/ at the zip's root, sources only.
"$PY" - "$ROOT/python" "$RUN/gpucoll.zip" <<'EOF' || exit 2
import os, sys, zipfile
src, out = sys.argv[1:]
with zipfile.ZipFile(out, "w") as z:
    for base, dirs, files in os.walk(os.path.join(src, "gpucoll")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                z.write(os.path.join(base, f), os.path.relpath(os.path.join(base, f), src))
EOF

cleanup() { cluster_stop; rm -rf "$RUN"; }
trap cleanup EXIT
# One Worker with GPU 0 and 2 cores: the two runs are two applications on it, one after the other.
# With --hosts: N Workers of 1 core, each its own simulated host.
if ! if [ -n "$HOSTS" ]; then cluster_start "$HOSTS" 1 8g gpu hosts; else cluster_start 1 2 8g gpu; fi; then
  tar -C "$RUN" -czf "$OUT/python-logs.tar.gz" logs
  exit 1
fi

# submit NAME RANKS TASK_GPU [JOB ARGS]: the job, the driver's output in $OUT/python-NAME.log; its exit status.
submit() {
  local name=$1 ranks=$2 task_gpu=$3
  shift 3
  echo "== python-$name: $ranks rank(s), task gpu amount $task_gpu $*"
  mkdir -p "$OUT/python-$name"
  "$JAVA" "${JFLAGS[@]}" "$LOG4J" -Xmx2g -cp "$SPARK_SLIM/jars/*" org.apache.spark.deploy.SparkSubmit \
    --master "$MASTER" --deploy-mode client --jars "$DIST_JAR" --py-files "$RUN/gpucoll.zip" \
    --conf spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin \
    --conf spark.gpucoll.report=verbose \
    --conf spark.gpucoll.timeout=60s \
    --conf spark.executor.cores="$([ -n "$HOSTS" ] && echo 1 || echo "$ranks")" \
    --conf spark.cores.max="$ranks" \
    --conf spark.task.cpus=1 \
    --conf spark.executor.memory=4g \
    --conf spark.executor.resource.gpu.amount=1 \
    --conf spark.task.resource.gpu.amount="$task_gpu" \
    --conf "spark.executor.extraJavaOptions=$LOG4J -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache" \
    --conf spark.executorEnv.NCCL_NVLS_ENABLE=0 \
    --conf spark.eventLog.enabled=true \
    --conf spark.eventLog.compress=false \
    --conf "spark.eventLog.dir=file:$RUN/events" \
    --conf spark.ui.enabled=false \
    --conf spark.driver.host=127.0.0.1 \
    --conf spark.driver.bindAddress=127.0.0.1 \
    --conf spark.dynamicAllocation.enabled=false \
    --conf spark.task.maxFailures=1 \
    --conf spark.stage.maxConsecutiveAttempts=1 \
    "$JOB" --ranks "$ranks" --out "$OUT/python-$name" --commit "$COMMIT" "$@" > "$OUT/python-$name.log" 2>&1
  local rc=$?
  tail -15 "$OUT/python-$name.log"
  echo "== python-$name: exit $rc"
  return $rc
}
if [ -n "$HOSTS" ]; then
  submit "hosts$HOSTS" "$HOSTS" 1 --hosts
  RC=$?
  cluster_stop
  tar -C "$RUN" --exclude='*.jar' --exclude='*.zip' -czf "$OUT/python-hosts-logs.tar.gz" events logs \
    $(cd "$RUN" && ls -d work* 2>/dev/null)
  echo "== python-hosts$HOSTS: exit $RC; logs: $OUT"
  exit $RC
fi
submit 1 1 1
RC1=$?
submit 2 2 0.5
RC2=$?
cluster_stop
# Without the jars and zips Spark copied into the executors' work folders.
tar -C "$RUN" --exclude='*.jar' --exclude='*.zip' -czf "$OUT/python-logs.tar.gz" events logs \
  $(cd "$RUN" && ls -d work* 2>/dev/null)
echo "== python-1: exit $RC1; python-2: exit $RC2; logs: $OUT ($(ls "$OUT" | tr '\n' ' '))"
[ "$RC1" -eq 0 ] && [ "$RC2" -eq 0 ]
