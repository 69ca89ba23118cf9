#!/usr/bin/env bash
# The GPU acceptance command: on the GPU machine (no Java there), from the repository root, with the
# bundle that integration-tests/gpu/acceptance/build.sh made here carried along (.spark-bundle, .pyspark,
# .gpu-accept; .spark-app is unpacked from .gpu-accept/spark-app.tar.xz):
#   bash integration-tests/gpu/acceptance/run.sh
# It runs, one after another, each bounded: the C++ correctness test (gc_test --quick), the GPU suite
# (--quick), the NCCL self-check, the Spark GPU job (--quick) plain and with fractional GPUs, the
# PySpark GPU job (1 rank, then 2 ranks sharing the GPU), GPU groups across 2 hosts simulated on the
# machine (the Java job and the PySpark job), the three examples through Spark, and the
# GPU benchmark (--quick, then the grouped-calls section at 1, 2 and 4 ranks), distributed LU and
# Cholesky on cuBLAS/cuSOLVER and their timing, cuSOLVERMp's QR, least squares and eigensolver on our
# communicator; the cuDF job too when CUDF_JAR names its jar. It prints
# one PASS/FAIL table and appends its row to docs/gpu-acceptance.md; the row, the table and every log
# come back under $OUT (gpu-acceptance-row.md, summary.txt, acceptance-logs.tar.gz): append the row to docs/gpu-acceptance.md here.
# Exit status 0 only when every step passed. --steps a,b runs only the named steps (a developer's
# partial run: it prints its table and appends no row, as it is no acceptance).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/gpucoll-acceptance-out}
WORK=$(mktemp -d /tmp/gpucoll-acceptance.XXXXXX)
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on these machines
START=$(date +%s)
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) ONLY=",${2:?--steps needs a list},"; shift ;;
    *) echo "gpu-acceptance: unknown argument $1 (known: --steps a,b)" >&2; exit 2 ;;
  esac
  shift
done
# The whole run, steps included, stays inside one command of the GPU machine (10 minutes) with room to spare.
BUDGET_S=${BUDGET_S:-570}
ACCEPT="$ROOT/.gpu-accept"
APP="$ROOT/.spark-app"
# Our jars travel stored, in one xz stream; here they become .spark-app again, as the steps expect it.
if [ -f "$ACCEPT/spark-app.tar.xz" ]; then
  rm -rf "$APP"
  xz -dc "$ACCEPT/spark-app.tar.xz" | tar -x -C "$ROOT" || { echo "gpu-acceptance: unpacking .spark-app failed" >&2; exit 2; }
fi
for need in "$ACCEPT/COMMIT" "$APP/COMMIT"; do
  [ -f "$need" ] || { echo "gpu-acceptance: $need is missing: build the bundle with integration-tests/gpu/acceptance/build.sh" >&2; exit 2; }
done
COMMIT=$(head -1 "$ACCEPT/COMMIT")
if [ "$(head -1 "$APP/COMMIT")" != "$COMMIT" ]; then
  echo "gpu-acceptance: .spark-app is from $(head -1 "$APP/COMMIT"), .gpu-accept from $COMMIT: rebuild both" >&2
  exit 2
fi
if grep -q uncommitted "$ACCEPT/COMMIT" "$APP/COMMIT"; then
  echo "gpu-acceptance: the bundle was built with uncommitted changes; its row will say so"
  COMMIT="$COMMIT+uncommitted"
fi

# The slim Spark set and its Java runtime (also the runtime of the suite and the benchmark).
bash integration-tests/gpu/spark/run.sh --unpack-only > "$WORK/unpack.log" 2>&1 || { cat "$WORK/unpack.log"; exit 2; }
SPARK_SLIM=${SPARK_SLIM:-/tmp/gpucoll-spark}
JAVA="$SPARK_SLIM/jre/bin/java"
CP="$(ls "$APP"/gpucoll-dist_2.13-*.jar | head -1):$(ls "$APP"/gpucoll-check-support-*.jar | head -1):$(ls "$APP"/gpucoll-gpu-checks-*.jar | head -1):$(ls "$ACCEPT"/gpucoll-cusolvermp-*.jar | head -1)"
# One string: each step is a command line run by bash -c under timeout.
JRUN="'$JAVA' -Xmx8g -XX:+UseParallelGC -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache -cp '$CP'"
BIN=/tmp/gpucoll-bin
mkdir -p "$BIN"
xz -dc "$ACCEPT/gc_test.xz" > "$BIN/gc_test" && chmod +x "$BIN/gc_test"
cp native-kernels/test/correctness-matrix.txt "$BIN/"
# cuSOLVERMp (its sm_90 code; integration-tests/gpu/bundle/cusolvermp-lib.sh) for the linalg step.
MP=/tmp/gpucoll-cusolvermp
mkdir -p "$MP"
xz -dc "$ACCEPT/libcusolverMp.so.0.xz" > "$MP/libcusolverMp.so.0" && (cd "$MP" && sha256sum -c --quiet "$ACCEPT/libcusolverMp.so.0.sha256") \
  || { echo "gpu-acceptance: .gpu-accept/libcusolverMp.so.0.xz is missing or damaged: rebuild with build.sh" >&2; exit 2; }

declare -A RESULT
for n in gc_test suite nccl spark spark-frac python hosts examples linalg bench; do RESULT[$n]="not run"; done
ORDER=()
# step NAME LIMIT_S COMMAND_LINE: runs it bounded, its output in $WORK/NAME/ (the step's OUT), PASS on exit 0.
step() {
  local name=$1 limit=$2 command=$3
  [ -n "$ONLY" ] && [[ "$ONLY" != *",$name,"* ]] && return
  mkdir -p "$WORK/$name"
  local t0 rc left
  t0=$(date +%s)
  left=$((BUDGET_S - (t0 - START)))
  if [ "$left" -lt 20 ]; then
    RESULT[$name]="FAIL (not run: the ${BUDGET_S} s budget is spent)"
    ORDER+=("$name")
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit} s): $command"
  OUT="$WORK/$name" timeout -k 10 "$limit" bash -c "$command" > "$WORK/$name/output.log" 2>&1
  rc=$?
  local secs=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then
    RESULT[$name]="PASS ${secs} s"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    RESULT[$name]="FAIL (over ${limit} s)"
  else
    RESULT[$name]="FAIL (exit $rc, ${secs} s)"
  fi
  ORDER+=("$name")
  tail -4 "$WORK/$name/output.log"
  echo "== $name: ${RESULT[$name]}"
}

step gc_test 150 "cd \"\$OUT\" && $BIN/gc_test --quick"
step suite 150 "$JRUN dev.gpucoll.cuda.check.GpuSuite --quick --budget-seconds 110"
step nccl 60 "$JRUN dev.gpucoll.cuda.check.NcclSelfCheck"
step spark 150 "bash integration-tests/gpu/spark/run.sh --quick"
step spark-frac 120 "bash integration-tests/gpu/spark/run.sh --quick --fractional"
# The PySpark job through spark-submit --py-files: 1 rank with the GPU, then 2 ranks sharing it.
step python 200 "bash integration-tests/gpu/python/gpu-check.sh --commit $COMMIT"
# GPU groups across hosts: 2 hosts simulated on this machine sharing its GPU (NCCL_HOSTID; NCCL's
# network transport), the Java correctness matrix through Spark, then the PySpark job (every
# collective on NCCL in the Python processes, DDP beside DDP on NCCL, a rank killed mid-call).
step hosts 200 "bash integration-tests/gpu/spark/run.sh --quick --hosts 2 && bash integration-tests/gpu/python/gpu-check.sh --hosts 2 --commit $COMMIT"
# The three examples, then the LU and Cholesky examples on gpucoll-linalg's DeviceSolver (--kernels gpu).
step examples 240 "bash integration-tests/gpu/spark/examples.sh --master 'local[4]' && EXAMPLES='lu cholesky' \\
  bash integration-tests/gpu/spark/examples.sh --master 'local[4]' --kernels gpu --n 2048 --block 128"
# gpucoll-linalg's device path (DeviceSolver) on 1 x 1, 1 x 2, 2 x 1 and 2 x 2 grids of ranks sharing
# the GPU, ragged shapes, every factorization's solve residual checked (LinalgBench fails above 10),
# cuSOLVERMp's getrf and potrf beside them; then potrf and getrf 10 times each at n = 4096 on the
# shared grids 1 x 3, 3 x 1, 2 x 1 and 2 x 2 (the ranks on the non-spinning staged path, as Spark's
# are), failing on any stop; then cuSOLVERMp's geqrf, ormqr, gels and syevd on our communicator (1 x 1;
# cuSOLVERMp supports one handle per GPU, so its P x Q grids need a GPU per rank, docs/linalg.md),
# checked against references and timed beside dense cuSOLVER; the libraries loaded eagerly
# (docs/linalg.md "On the device").
step linalg 420 "CUDA_MODULE_LOADING=EAGER LD_LIBRARY_PATH=$MP:/usr/local/cuda/lib64\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} \
  $JRUN dev.gpucoll.cuda.check.LinalgBench --sizes 1000,2049 --block 128 --grids 1x1,1x2,2x1,2x2 --repeat 1 \
  --cusolvermp --shared-grids 10 --shared-n 4096 --qr-eig --commit $COMMIT --json-dir \"\$OUT\""
# The benchmark's quick sections, then its grouped calls at 1, 2 and 4 ranks (each section bounded),
# then the factorizations' timing against one process (cuSOLVER getrf / potrf of the whole matrix).
step bench 260 "$JRUN dev.gpucoll.cuda.check.GpuBench --quick --section-timeout-s 60 --json-dir \"\$OUT/bench\" \
  --commit $COMMIT && $JRUN dev.gpucoll.cuda.check.GpuBench --group-only --section-timeout-s 90 \
  --json-dir \"\$OUT/bench-group\" --commit $COMMIT && EXAMPLES=linalg-bench bash integration-tests/gpu/spark/examples.sh \\
  --master 'local[4]' --kernels gpu --sizes 2048,4096 --block 128"
CUDF_RESULT="not run (no CUDF_JAR)"
if [ -n "${CUDF_JAR:-}" ]; then
  step cudf 240 "bash integration-tests/gpu/spark/run.sh --fractional --cudf '$CUDF_JAR'"
  CUDF_RESULT=${RESULT[cudf]}
fi

RESULT_ALL=PASS
for n in "${ORDER[@]}"; do
  case "${RESULT[$n]}" in PASS*) ;; *) RESULT_ALL=FAIL ;; esac
done
TOTAL=$(($(date +%s) - START))
DATE=$(date -u +%F)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
MACHINE="$(nvidia-smi -L | grep -c '^GPU ') x $GPU"
ROW="| $DATE | $COMMIT | $MACHINE | $DRIVER | ${RESULT[gc_test]} | ${RESULT[suite]} | ${RESULT[nccl]} | ${RESULT[spark]} | ${RESULT[spark-frac]} | ${RESULT[python]} | ${RESULT[hosts]} | ${RESULT[examples]} | ${RESULT[linalg]} | ${RESULT[bench]} | $RESULT_ALL (${TOTAL} s) |"
{
  echo "================ GPU acceptance: $RESULT_ALL in ${TOTAL} s, commit $COMMIT, $MACHINE, driver $DRIVER"
  for n in "${ORDER[@]}"; do printf '%-11s %s\n' "$n" "${RESULT[$n]}"; done
  echo "cudf        $CUDF_RESULT"
  echo
  echo "row for docs/gpu-acceptance.md:"
  echo "$ROW"
} | tee "$OUT/summary.txt"
if [ -n "$ONLY" ]; then
  echo "(a partial run, --steps: no row)"
else
  echo "$ROW" > "$OUT/gpu-acceptance-row.md"
  echo "$ROW" >> docs/gpu-acceptance.md
fi
# What comes back is at most 8 files, 2 folders deep: every step's logs in one archive.
cp "$WORK/suite/output.log" "$OUT/suite.log" 2>/dev/null
tar -C "$WORK" -czf "$OUT/acceptance-logs.tar.gz" . 2>/dev/null
rm -rf "$WORK"
[ "$RESULT_ALL" = PASS ]
