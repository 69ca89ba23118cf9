#!/usr/bin/env bash
# Puts cuSOLVERMp's libcusolverMp.so.0 (from the wheel nvidia-cusolvermp-cu13==0.8.0.3126, the version
# that loads beside NCCL 2.28; 0.9 needs NCCL >= 2.29) into $1 as libcusolverMp.so.0.xz with its sha256,
# for the cuSOLVERMp checks on the GPU machine. Only its sm_90 device code travels (the GPU machine's
# cards, H100 and H200): fatbin_keep_arch.py zeroes the other architectures' images, and the 73 MB
# library packs to about 1.1 MB (6.4 MB whole); the wheel's own sha256 of the library is kept beside
# (libcusolverMp.so.0.wheel.sha256). The wheel is fetched with pip into $CUSOLVERMP_WHEEL_DIR
# (default /tmp/cusolvermp-wheel) unless it is there already.
# On the GPU machine: xz -dc <dir>/libcusolverMp.so.0.xz > /tmp/cusolvermp/libcusolverMp.so.0
# (or python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" in out)
set -euo pipefail
DEST=${1:?usage: cusolvermp-lib.sh <destination dir>}
WHEEL_SPEC=nvidia-cusolvermp-cu13==0.8.0.3126
WHEEL_DIR=${CUSOLVERMP_WHEEL_DIR:-/tmp/cusolvermp-wheel}
mkdir -p "$WHEEL_DIR" "$DEST"
WHEEL=$(ls "$WHEEL_DIR"/nvidia_cusolvermp_cu13-0.8.0.3126-*.whl 2>/dev/null | head -1 || true)
if [ -z "$WHEEL" ]; then
  if ! python3 -m pip download --no-deps "$WHEEL_SPEC" -d "$WHEEL_DIR" >&2; then
    echo "cusolvermp-lib.sh: pip could not fetch $WHEEL_SPEC; put the wheel in $WHEEL_DIR" >&2
    exit 1
  fi
  WHEEL=$(ls "$WHEEL_DIR"/nvidia_cusolvermp_cu13-0.8.0.3126-*.whl | head -1)
fi
python3 - "$WHEEL" "$DEST/libcusolverMp.so.0" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("nvidia/cu13/lib/libcusolverMp.so.0") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
(cd "$DEST" && sha256sum libcusolverMp.so.0 > libcusolverMp.so.0.wheel.sha256)
python3 "$(dirname "$0")/fatbin_keep_arch.py" "$DEST/libcusolverMp.so.0" 90
(cd "$DEST" && sha256sum libcusolverMp.so.0 > libcusolverMp.so.0.sha256)
xz -9e -T2 -f "$DEST/libcusolverMp.so.0"
ls -la "$DEST"
