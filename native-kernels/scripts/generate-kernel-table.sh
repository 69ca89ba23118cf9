#!/usr/bin/env bash
# Regenerates the kernel table's three outputs from kernel-table.txt (run after editing the table, then
# commit all four files):
#   include/gpucoll/kernel_table.h                                  (the kernels, the C++ test programs)
#   ../spark-plugin/gpucoll-cuda/src/main/java/dev/gpucoll/cuda/KernelTable.java   (the Java host)
#   test/bench_table.h            (the table's "bench" section: the test programs' comparison kernels)
# The Maven build runs the same generator with --check and fails when a checked-in output is stale.
#   native-kernels/scripts/generate-kernel-table.sh [--check]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:---write}"
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
exec "$java_bin" "$here/scripts/KernelTableGen.java" "$mode" "$here/kernel-table.txt" \
  "$here/include/gpucoll/kernel_table.h" \
  "$here/../spark-plugin/gpucoll-cuda/src/main/java/dev/gpucoll/cuda/KernelTable.java" \
  "$here/test/bench_table.h"
