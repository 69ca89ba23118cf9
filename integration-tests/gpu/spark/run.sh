#!/usr/bin/env bash
# The Spark run on GPUs, end to end: a Spark standalone cluster on this machine (a Master and one
# Worker per GPU, each Worker given only its own GPU by its own discovery script), the plugin on,
# and dev.gpucoll.cuda.check.spark.SparkGpuCheck submitted to it (see docs/spark-gpu.md for what each
# stage checks). Without GPUs the same cluster runs on the host backend (2 Workers by default).
#
# Needs the slim Spark set and our jars from integration-tests/gpu/bundle/spark-slim.sh (or build.sh --with-spark).
# On the GPU machine (no Java there; 64 MiB per upload), from the repository root, with .spark-bundle
# and .spark-app uploaded next to the repository (44 + 8 MiB measured, one upload):
#   bash integration-tests/gpu/spark/run.sh [--quick] [--fractional] [--hosts N] [--gpus N] [--conf k=v ...] [--cudf CUDF_JAR]
# which unpacks Spark + its Java runtime into $SPARK_SLIM (default /tmp/gpucoll-spark) once; that stays
# on a warm machine, so later runs need .spark-app alone. If both do not fit one upload: first
# .spark-bundle with --unpack-only, then .spark-app.
# --hosts N: N executors, each on a host of its own simulated on this machine (integration-tests/gpu/spark/cluster.sh),
# all on GPU 0: the group spans hosts, so every collective runs on NCCL (over its network transport).
# --cudf CUDF_JAR: the cuDF job instead (dev.gpucoll.cuda.check.spark.CudfGpuCheck, docs/cudf-gpu.md), with
# the cuDF jar (ai.rapids:cudf:26.08.1:cuda13) and .spark-app's gpucoll-cudf jar next to the one jar.
# Logs: $OUT when set, else /tmp/gpucoll-spark-out: driver.log, spark-logs.tar.gz (event log,
# executor logs, NCCL debug files, metrics CSVs, Master/Worker logs), the JSON benchmark record.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
SPARK_SLIM=${SPARK_SLIM:-/tmp/gpucoll-spark}
LOGS=${OUT:-/tmp/gpucoll-spark-out}
QUICK=""
FRACTIONAL=""
HOSTS=""
UNPACK_ONLY=""
NGPUS=""
CPU_WORKERS=2
EXTRA_CONF=() # e.g. --conf spark.gpucoll.nccl.blocking=true
CUDF_JAR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=--quick ;;
    --fractional) FRACTIONAL=--fractional ;;
    --hosts) HOSTS=${2:?--hosts needs a number}; shift ;;
    --unpack-only) UNPACK_ONLY=1 ;;
    --gpus) NGPUS=${2:?--gpus needs a number}; shift ;;
    --cpu-workers) CPU_WORKERS=${2:?--cpu-workers needs a number}; shift ;;
    --conf) EXTRA_CONF+=(--conf "${2:?--conf needs key=value}"); shift ;;
    --cudf) CUDF_JAR=${2:?--cudf needs the cuDF jar}; shift ;;
    *) echo "run.sh: unknown argument $1 (known: --quick --fractional --hosts N --unpack-only --gpus N --cpu-workers N" \
         "--conf key=value --cudf CUDF_JAR)" >&2
       exit 2 ;;
  esac
  shift
done
mkdir -p "$LOGS"

# ---- 1. the slim Spark set and its Java runtime
BUNDLE="$ROOT/.spark-bundle"
if ls "$BUNDLE"/spark.tar.xz.part* >/dev/null 2>&1; then
  SUMS=$(cat "$BUNDLE/SHA256SUMS")
  if [ "$(cat "$SPARK_SLIM/.sha256sums" 2>/dev/null)" != "$SUMS" ]; then
    (cd "$BUNDLE" && sha256sum -c --quiet SHA256SUMS) || { echo "run.sh: .spark-bundle parts are damaged" >&2; exit 2; }
    rm -rf "$SPARK_SLIM"
    mkdir -p "$(dirname "$SPARK_SLIM")"
    STAGE=$(mktemp -d "$(dirname "$SPARK_SLIM")/gpucoll-spark-unpack.XXXXXX")
    cat "$BUNDLE"/spark.tar.xz.part* | xz -dc | tar -x -C "$STAGE" || { echo "run.sh: unpacking failed" >&2; exit 2; }
    mv "$STAGE/gpucoll-spark" "$SPARK_SLIM" && rmdir "$STAGE"
    echo "$SUMS" > "$SPARK_SLIM/.sha256sums"
    echo "== unpacked the slim Spark set into $SPARK_SLIM ($(du -sh "$SPARK_SLIM" | cut -f1))"
  fi
fi
if [ -n "$UNPACK_ONLY" ]; then
  [ -x "$SPARK_SLIM/jre/bin/java" ] || { echo "run.sh: no .spark-bundle to unpack (build it with integration-tests/gpu/bundle/spark-slim.sh)" >&2; exit 2; }
  "$SPARK_SLIM/jre/bin/java" -version 2>&1 | sed -n 1p
  exit 0
fi
if [ ! -x "$SPARK_SLIM/jre/bin/java" ] || [ ! -d "$SPARK_SLIM/jars" ]; then
  echo "run.sh: no slim Spark set at $SPARK_SLIM: first run 'bash integration-tests/gpu/spark/run.sh --unpack-only' with" \
    ".spark-bundle uploaded (a fresh machine has lost it)" >&2
  exit 2
fi
APP="$ROOT/.spark-app"
if ! ls "$APP"/gpucoll-gpu-checks-*.jar >/dev/null 2>&1; then
  echo "run.sh: no .spark-app (our jars): build it with integration-tests/gpu/bundle/spark-slim.sh and upload .spark-app" >&2
  exit 2
fi
if [ -n "$CUDF_JAR" ]; then
  [ -f "$CUDF_JAR" ] || { echo "run.sh: --cudf $CUDF_JAR: no such file" >&2; exit 2; }
  ls "$APP"/gpucoll-cudf-*.jar >/dev/null 2>&1 || { echo "run.sh: no gpucoll-cudf jar in .spark-app (rebuild it with" \
    "integration-tests/gpu/bundle/spark-slim.sh --app-only)" >&2; exit 2; }
fi
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on these machines
RUN=$(mktemp -d /tmp/gpucoll-spark-run.XXXXXX)
# JAVA, JFLAGS, JAVA_HOME, SPARK_HOME; cluster_start, cluster_stop
source "$ROOT/integration-tests/gpu/spark/cluster.sh"
export SPARK_LOCAL_DIRS="$RUN/local" # the Workers' and executors' scratch space, removed at the end
# As a user deploys it: the one jar through --jars, the job as the application jar; no extraClassPath.
DIST_JAR=$(ls "$APP"/gpucoll-dist_2.13-*.jar | head -1)
APP_JAR=$(ls "$APP"/gpucoll-gpu-checks-*.jar | head -1)
CHECK_JAR=$(ls "$APP"/gpucoll-check-support-*.jar | head -1) # the job's reference checks, not the plugin's
if [ -n "$CUDF_JAR" ]; then
  # cuDF is the application's: its jar and the module jar go next to the one jar.
  JARS="$DIST_JAR,$CHECK_JAR,$(ls "$APP"/gpucoll-cudf-*.jar | head -1),$(readlink -f "$CUDF_JAR")"
  JOB=CudfGpuCheck
else
  JARS="$DIST_JAR,$CHECK_JAR"
  JOB=SparkGpuCheck
fi
LOG4J="-Dlog4j2.configurationFile=file:$ROOT/conf/log4j2.properties"

# ---- 2. the cluster
if [ -z "$NGPUS" ]; then
  NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
mkdir -p "$RUN"/{events,metrics,nccl,local,logs}
if [ -n "$FRACTIONAL" ]; then
  # Two tasks share the one GPU of one executor (without GPUs: two tasks in one executor).
  WORKERS=1; CORES=2; RANKS=2; EXECUTORS=1; TASK_GPU=$([ "$NGPUS" -gt 0 ] && echo 0.5)
elif [ -n "$HOSTS" ]; then
  # One executor per simulated host, every one on GPU 0 (or on the host backend without GPUs).
  WORKERS=$HOSTS; CORES=1; RANKS=$HOSTS; EXECUTORS=$HOSTS; TASK_GPU=$([ "$NGPUS" -gt 0 ] && echo 1)
elif [ "$NGPUS" -gt 0 ]; then
  WORKERS=$NGPUS; CORES=1; RANKS=$NGPUS; EXECUTORS=$NGPUS; TASK_GPU=1
else
  WORKERS=$CPU_WORKERS; CORES=1; RANKS=$CPU_WORKERS; EXECUTORS=$CPU_WORKERS; TASK_GPU=""
fi
BACKEND=$([ "$NGPUS" -gt 0 ] && echo gpu || echo host)
echo "== Spark run: backend $BACKEND, $WORKERS worker(s), $RANKS rank(s)${FRACTIONAL:+, fractional GPUs (task gpu $TASK_GPU)}${HOSTS:+, $HOSTS simulated hosts},"\
" $(date -u +%FT%TZ), commit $(tr '\n' ' ' < "$APP/COMMIT")"
[ "$NGPUS" -gt 0 ] && nvidia-smi --query-gpu=index,name,driver_version,uuid,pci.bus_id --format=csv,noheader \
  | tee "$RUN/logs/gpus.txt"
"$JAVA" -version 2>&1 | sed -n 1p

cleanup() { cluster_stop; }
trap cleanup EXIT
if ! cluster_start "$WORKERS" "$CORES" "$([ "$BACKEND" = gpu ] && echo 24g || echo 2g)" \
    "$([ -n "$TASK_GPU" ] && echo gpu)" "$([ -n "$HOSTS" ] && echo hosts)"; then
  tar -C "$RUN" -czf "$LOGS/spark-logs.tar.gz" logs
  exit 1
fi

# ---- 3. the job
CONF=(
  --conf spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin
  --conf spark.gpucoll.report=verbose
  --conf spark.gpucoll.timeout=60s
  --conf spark.executor.cores=$CORES
  --conf spark.task.cpus=1
  --conf spark.cores.max=$((WORKERS * CORES))
  --conf spark.executor.memory=$([ "$BACKEND" = gpu ] && echo 16g || echo 1g)
  --conf "spark.executor.extraJavaOptions=$LOG4J -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache"
  --conf spark.executorEnv.NCCL_DEBUG=INFO
  --conf spark.executorEnv.NCCL_DEBUG_SUBSYS=INIT,TUNING
  --conf "spark.executorEnv.NCCL_DEBUG_FILE=$RUN/nccl/nccl.%h.%p.log"
  --conf spark.executorEnv.NCCL_NVLS_ENABLE=0
  --conf spark.eventLog.enabled=true
  --conf spark.eventLog.compress=false
  --conf spark.eventLog.dir=file:$RUN/events
  --conf "spark.metrics.conf.*.sink.csv.class=org.apache.spark.metrics.sink.CsvSink"
  --conf "spark.metrics.conf.*.sink.csv.period=1"
  --conf "spark.metrics.conf.*.sink.csv.unit=seconds"
  --conf "spark.metrics.conf.*.sink.csv.directory=$RUN/metrics"
  --conf spark.ui.enabled=false
  --conf spark.driver.host=127.0.0.1
  --conf spark.driver.bindAddress=127.0.0.1
  --conf spark.dynamicAllocation.enabled=false
  --conf spark.task.maxFailures=1
  --conf spark.stage.maxConsecutiveAttempts=1
)
CONF+=("${EXTRA_CONF[@]}")
if [ -n "$TASK_GPU" ]; then
  CONF+=(--conf spark.executor.resource.gpu.amount=1 --conf spark.task.resource.gpu.amount=$TASK_GPU)
fi
if [ -n "$CUDF_JAR" ]; then
  # The job forces our spinning kernels on ranks that share a GPU; a kernel loaded lazily at its
  # first launch (CUDA's default) can wait for the context to go idle, which a peer's spinning
  # kernel never lets happen. Every module (libcudf's too) is loaded when the context starts.
  CONF+=(--conf spark.executorEnv.CUDA_MODULE_LOADING=EAGER)
fi
"$JAVA" "${JFLAGS[@]}" "$LOG4J" "-Xmx$([ "$BACKEND" = gpu ] && echo 8g || echo 1g)" -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache \
  -cp "$SPARK_SLIM/jars/*" org.apache.spark.deploy.SparkSubmit --master "$MASTER" --deploy-mode client \
  --jars "$JARS" --class "dev.gpucoll.cuda.check.spark.$JOB" "${CONF[@]}" "$APP_JAR" \
  --ranks "$RANKS" --executors "$EXECUTORS" $QUICK $([ "$JOB" = SparkGpuCheck ] && echo $FRACTIONAL) 2>&1 \
  | tee "$RUN/logs/driver.log"
RC=${PIPESTATUS[0]}
cleanup
trap - EXIT
# Across simulated hosts the job passes only if the group saw HOSTS hosts and ran every collective on NCCL.
if [ -n "$HOSTS" ] && [ "$RC" -eq 0 ]; then
  GROUP=$(grep -m1 'GpuCollectivesPlugin: gpucoll group .* ranks on hosts' "$RUN/logs/driver.log" | sed 's/, split 1:.*//')
  SEEN=$(echo "$GROUP" | sed -n 's/.* ranks on hosts \[\([^]]*\)\].*/\1/p' | tr ',' '\n' | grep -c .)
  OFF=$(echo "$GROUP" | grep -oE '(allReduce|allGather|allToAll|allToAllv|broadcast|reduceScatter)=[a-z-]+x[0-9]+' \
    | sed 's/x[0-9]*$//' | grep -vE '=nccl(-[a-z-]+)?$' | tr '\n' ' ')
  if [ "$SEEN" -ne "$HOSTS" ] || [ -n "$OFF" ] || ! echo "$GROUP" | grep -q 'allReduce=nccl'; then
    echo "run.sh: across $HOSTS simulated hosts the group saw $SEEN host(s) and took ${OFF:-no NCCL allReduce}" \
      "(every collective must run on NCCL): $GROUP" | tee -a "$RUN/logs/driver.log"
    RC=1
  else
    echo "== across hosts: $SEEN hosts, every collective on NCCL" | tee -a "$RUN/logs/driver.log"
  fi
fi

# ---- 4. what comes back (at most 8 files, 2 folders deep: one tar for the many small files)
cp "$RUN/logs/driver.log" "$LOGS/driver.log"
COMMIT=$(head -1 "$APP/COMMIT")
DATE=$(date -u +%F)
if [ "$BACKEND" = gpu ]; then
  KIND="gpu-${NGPUS}x"
  MACHINE="$NGPUS x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), driver $(nvidia-smi \
    --query-gpu=driver_version --format=csv,noheader | head -1)"
else
  KIND="spark-host"
  MACHINE="$(nproc) CPU cores, no GPU (host backend)"
fi
[ -n "$FRACTIONAL" ] && KIND="$KIND-fractional"
[ -n "$HOSTS" ] && KIND="$KIND-hosts$HOSTS"
[ -n "$CUDF_JAR" ] && KIND="cudf-shuffle"
RECORD="$LOGS/$KIND-$DATE-$COMMIT.json"
if grep -q '^BENCH ' "$RUN/logs/driver.log"; then
  {
    printf '{"kind": "%s", "date": "%s", "commit": "%s", "machine": "%s", "rows": [\n' "$KIND" "$DATE" "$COMMIT" "$MACHINE"
    grep '^BENCH ' "$RUN/logs/driver.log" | sed 's/^BENCH //' | sed '$!s/$/,/'
    printf ']}\n'
  } > "$RECORD"
  echo "== benchmark record: $RECORD (copy it to docs/records/bench/ for a GPU run)"
fi
EVENTS=$(cat "$RUN"/events/*/events_* 2>/dev/null | grep -c 'GroupReportEvent')
NCCL_FILES=$(ls "$RUN"/nccl 2>/dev/null | wc -l)
# Without the jars Spark copied into the executors' work folders (the cuDF jar alone is 337 MB).
tar -C "$RUN" --exclude='*.jar' -czf "$LOGS/spark-logs.tar.gz" events metrics nccl logs $(cd "$RUN" && ls -d work* 2>/dev/null)
rm -rf "$RUN"

echo
echo "================ summary ================"
grep -E ' (INFO|WARN|ERROR) GpuCollectivesPlugin' "$LOGS/driver.log" | head -40
echo "event log: $EVENTS GroupReportEvent(s); NCCL debug files: $NCCL_FILES"
sed -n "/^== $JOB summary/,\$p" "$LOGS/driver.log" | grep -v '^BENCH '
echo "logs: $LOGS ($(ls "$LOGS" | tr '\n' ' '))"
exit "$RC"
