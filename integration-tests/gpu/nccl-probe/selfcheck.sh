#!/usr/bin/env bash
# Runs only dev.gpucoll.cuda.check.NcclSelfCheck from a GPU bundle (integration-tests/gpu/bundle/build.sh makes
# .gpu-bundle/: a jlink'ed JRE and the jars), on the GPU machine, from the repository root:
#   bash integration-tests/gpu/nccl-probe/selfcheck.sh [bundle-dir]
# Upload .gpu-bundle to the GPU machine beside the repository. Output: $OUT/nccl-selfcheck.log and
# $OUT/nccl-selfcheck-logs.tar.gz (NCCL's own log of every case).
set -uo pipefail
B=${1:-.gpu-bundle}
OUTDIR=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0
"$B/jre/bin/java" -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache -cp "$B/lib/*" \
  dev.gpucoll.cuda.check.NcclSelfCheck /tmp/nccl-selfcheck 2>&1 | tee "$OUTDIR/nccl-selfcheck.log"
rc=${PIPESTATUS[0]}
tar -C /tmp -czf "$OUTDIR/nccl-selfcheck-logs.tar.gz" nccl-selfcheck 2>/dev/null
exit "$rc"
