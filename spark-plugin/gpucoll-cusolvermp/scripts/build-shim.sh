#!/usr/bin/env bash
# Compiles the JNI shim (src/main/c/gpucoll_cusolvermp.c) with the system C compiler into
#   $1/dev/gpucoll/cusolvermp/native/<platform>/libgpucoll_cusolvermp.so
# where <platform> is linux-x86_64 or linux-arm64, the path CuSolverMpNative extracts it from.
# The shim links only libdl: libcusolverMp.so.0 is dlopen()ed at run time.
# $CC (default cc) is the compiler; $JAVA_HOME (else the JDK of javac on PATH) gives jni.h.
set -euo pipefail
OUT_CLASSES=${1:?usage: build-shim.sh <classes dir>}
HERE=$(cd "$(dirname "$0")/.." && pwd)
SRC="$HERE/src/main/c/gpucoll_cusolvermp.c"
CC=${CC:-cc}
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "build-shim.sh: no C compiler ($CC) on PATH: gpucoll-cusolvermp's JNI shim needs one" \
    "(install gcc, or set CC); the other modules build without it (-pl '!spark-plugin/gpucoll-cusolvermp')" >&2
  exit 1
fi
JDK=${JAVA_HOME:-}
if [ -z "$JDK" ] || [ ! -f "$JDK/include/jni.h" ]; then
  JDK=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
fi
if [ ! -f "$JDK/include/jni.h" ]; then
  echo "build-shim.sh: no jni.h under \$JAVA_HOME/include or the JDK of javac: a full JDK is needed" >&2
  exit 1
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) PLATFORM=linux-x86_64 ;;
  Linux-aarch64) PLATFORM=linux-arm64 ;;
  *) echo "build-shim.sh: unsupported platform $(uname -s)-$(uname -m) (cuSOLVERMp ships for Linux x86_64 and aarch64)" >&2; exit 1 ;;
esac
DEST="$OUT_CLASSES/dev/gpucoll/cusolvermp/native/$PLATFORM"
mkdir -p "$DEST"
"$CC" -O2 -shared -fPIC -Wall -Wextra -std=c11 -D_GNU_SOURCE \
  -I"$JDK/include" -I"$JDK/include/linux" \
  -o "$DEST/libgpucoll_cusolvermp.so" "$SRC" -ldl
