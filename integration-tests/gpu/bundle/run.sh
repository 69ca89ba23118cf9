#!/usr/bin/env bash
# The one command on the GPU machine (no Java there): runs the GPU correctness suite, the NCCL
# self-check (when present), and the GPU benchmark, from the bundle built by integration-tests/gpu/bundle/build.sh.
# Run from the repository root:  bash .gpu-bundle/run.sh [--quick] [--suite-only|--bench-only|--cpp-test|--linalg|--cusolvermp]
# (--cpp-test: only the C++ correctness test gc_test, on the correctness matrix beside it;
#  --cusolvermp: only CuSolverMpCheck, with the bundle's cusolvermp/libcusolverMp.so.0.xz (build.sh
#  --with-cusolvermp) unpacked to /tmp/cusolvermp and on LD_LIBRARY_PATH with /usr/local/cuda/lib64;
#  --linalg: only LinalgBench, LINALG_ARGS its arguments, with cuSOLVERMp when the bundle has it)
# Logs go to $OUT when set, else /tmp/gpucoll-out; the short tables print last.
set -uo pipefail
BUNDLE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BUNDLE/.." && pwd)
LOGS=${OUT:-/tmp/gpucoll-out}
mkdir -p "$LOGS"
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on these machines
JAVA="$BUNDLE/jre/bin/java"
CP="$BUNDLE/lib/*"
JOPTS=(-Xmx8g -XX:+UseParallelGC -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache -cp "$CP")
QUICK=""
WHAT=all
for a in "$@"; do
  case "$a" in
    --quick) QUICK=--quick ;;
    --suite-only) WHAT=suite ;;
    --bench-only) WHAT=bench ;;
    --cpp-test) WHAT=cpp-test ;;
    --cusolvermp) WHAT=cusolvermp ;;
    --linalg) WHAT=linalg ;;
    *) echo "run.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

echo "== bundle commit $(tr '\n' ' ' < "$BUNDLE/COMMIT"); $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=index,name,driver_version,uuid,pci.bus_id --format=csv,noheader | tee "$LOGS/gpus.txt"
nvidia-smi topo -m > "$LOGS/topo.txt" 2>&1 || true
"$JAVA" -version 2>&1 | sed -n 1p

# cuSOLVERMp (optional, build.sh --with-cusolvermp) unpacked to /tmp/cusolvermp; xz, else Python's lzma.
unpack_cusolvermp() {
  [ -f "$BUNDLE/cusolvermp/libcusolverMp.so.0.xz" ] || return 1
  mkdir -p /tmp/cusolvermp
  if command -v xz >/dev/null; then
    xz -dc "$BUNDLE/cusolvermp/libcusolverMp.so.0.xz" > /tmp/cusolvermp/libcusolverMp.so.0
  else
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
      "$BUNDLE/cusolvermp/libcusolverMp.so.0.xz" /tmp/cusolvermp/libcusolverMp.so.0
  fi
  (cd /tmp/cusolvermp && sha256sum -c "$BUNDLE/cusolvermp/libcusolverMp.so.0.sha256") || exit 2
  export LD_LIBRARY_PATH="/tmp/cusolvermp:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

if [ "$WHAT" = cusolvermp ]; then
  unpack_cusolvermp || { echo "run.sh: the bundle has no cusolvermp/libcusolverMp.so.0.xz (build.sh --with-cusolvermp)" >&2; exit 2; }
  "$JAVA" "${JOPTS[@]}" dev.gpucoll.cuda.check.CuSolverMpCheck ${CUSOLVERMP_ARGS:-} 2>&1 | tee "$LOGS/cusolvermp.log"
  exit "${PIPESTATUS[0]}"
fi

# The distributed LU and Cholesky on the device beside cuSOLVER (and cuSOLVERMp when the bundle has it;
# LINALG_ARGS="... --qr-eig" adds its QR, least squares and eigensolver, checked and timed beside
# cuSOLVER, at sizes the host can read back whole). Ranks sharing the GPU take the staged path (no
# kernel spins); the libraries still load their kernels eagerly (CUDA_MODULE_LOADING=EAGER).
if [ "$WHAT" = linalg ]; then
  MP=""
  if unpack_cusolvermp; then MP=--cusolvermp; fi
  CUDA_MODULE_LOADING=EAGER "$JAVA" "${JOPTS[@]}" dev.gpucoll.cuda.check.LinalgBench \
    ${LINALG_ARGS:---sizes 4096,8192,16384 --block 512,1024 --grids 1x1,2x2} $MP \
    --commit "$(head -1 "$BUNDLE/COMMIT" | cut -c1-7)" --json-dir "$LOGS" 2>&1 | tee -a "$LOGS/linalg.log"
  exit "${PIPESTATUS[0]}"
fi

# The C++ programs travel gzip'ed: unpacked beside a copy of the correctness matrix (gc_test reads it
# from beside its binary).
BIN=/tmp/gpucoll-bin
mkdir -p "$BIN"
for b in gc_test gc_bench; do
  if [ -f "$BUNDLE/bin/$b.gz" ]; then gunzip -c "$BUNDLE/bin/$b.gz" > "$BIN/$b" && chmod +x "$BIN/$b"; fi
done
[ -f "$BUNDLE/bin/correctness-matrix.txt" ] && cp "$BUNDLE/bin/correctness-matrix.txt" "$BIN/"

if [ "$WHAT" = cpp-test ]; then
  [ -x "$BIN/gc_test" ] || { echo "run.sh: the bundle has no bin/gc_test.gz (built without nvcc)" >&2; exit 2; }
  (cd "$LOGS" && timeout "${GC_TEST_TIMEOUT_S:-300}" "$BIN/gc_test" $QUICK) > "$LOGS/gc_test.log" 2>&1
  RC=$?
  grep -E "^FAIL|graph of|robustness|checks in|correctness matrix|gc_test:" "$LOGS/gc_test.log" | tail -40
  exit $RC
fi

# The C++ benchmark (built into the bundle): its host cost per cuLaunchKernel of gc_allreduce_ll_f32 is
# the reference for the Java launch path, measured in the same run.
CPP_US=""
if [ "$WHAT" != suite ] && [ -x "$BIN/gc_bench" ]; then
  gunzip -c "$BUNDLE/bin/gpucoll_kernels.fatbin.gz" > /tmp/gpucoll_kernels.fatbin
  (cd "$LOGS" && timeout "${GC_BENCH_TIMEOUT_S:-300}" "$BIN/gc_bench" --fatbin /tmp/gpucoll_kernels.fatbin) 2>&1 | tee "$LOGS/gc_bench.log"
  CPP_US=$(grep -E '^\| C\+\+ cuLaunchKernel' "$LOGS/gc_bench.log" | head -1 | awk -F'|' '{gsub(/ /,"",$3); print $3}')
fi

RC=0
if [ "$WHAT" != bench ]; then
  "$JAVA" "${JOPTS[@]}" dev.gpucoll.cuda.check.GpuSuite $QUICK --budget-seconds "${SUITE_BUDGET_S:-240}" \
    2>&1 | tee "$LOGS/suite.log"
  RC=${PIPESTATUS[0]}
  if grep -qx 'dev.gpucoll.cuda.check.NcclSelfCheck' "$BUNDLE/MAINS" 2>/dev/null; then
    "$JAVA" "${JOPTS[@]}" dev.gpucoll.cuda.check.NcclSelfCheck 2>&1 | tee "$LOGS/nccl-selfcheck.log"
  else
    echo "(no dev.gpucoll.cuda.check.NcclSelfCheck in this bundle)"
  fi
fi
if [ "$WHAT" != suite ]; then
  # Bounded (a hung benchmark must not hold the GPU machine); -k: the JVM may ignore the first signal.
  timeout -k 10 "${GPU_BENCH_TIMEOUT_S:-900}" "$JAVA" "${JOPTS[@]}" dev.gpucoll.cuda.check.GpuBench $QUICK ${CPP_US:+--cpp-us-per-launch "$CPP_US"} \
    --json-dir "$LOGS/bench" --commit "$(head -1 "$BUNDLE/COMMIT" | cut -c1-7)" 2>&1 | tee "$LOGS/bench.log"
fi

echo
echo "================ summary ================"
[ -f "$LOGS/suite.log" ] && sed -n '/^== GpuSuite table/,$p' "$LOGS/suite.log"
[ -f "$LOGS/gc_bench.log" ] && grep -E '^\| C\+\+' "$LOGS/gc_bench.log"
[ -f "$LOGS/bench.log" ] && sed -n '/^== GpuBench table/,$p' "$LOGS/bench.log"
exit $RC
