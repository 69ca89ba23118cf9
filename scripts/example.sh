#!/usr/bin/env bash
# Builds what the examples need and runs one of them as a Spark barrier job, checked against the
# same computation in one process (exit status 1 when the check fails):
#   training  data-parallel logistic regression on the UCI digits, gradients all-reduced each step
#   moe       mixture-of-experts layer: tokens to experts and back with allToAllv
#   linalg    block-cyclic SUMMA matrix multiply and power iteration on a 2-D process grid
#   lu        LU with partial pivoting (MAXLOC pivot search) on a block-cyclic process grid
#   cholesky  Cholesky on a block-cyclic process grid
#   linalg-bench  LU and Cholesky timed against one process (table + JSON under docs/records/bench/)
#   solve     A X = B by the product's distributed LU or Cholesky (gpucoll-linalg), any shape
# Default: a Spark local-cluster with one executor JVM per rank (4); --master local[4] runs the
# ranks as threads of one JVM. GPU backend when every rank has a usable GPU, host backend otherwise.
# Usage: scripts/example.sh training|moe|linalg|lu|cholesky|linalg-bench|solve [--ranks N] [--master M] [example options]
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  training) main=dev.gpucoll.examples.training.DigitsTraining ;;
  moe) main=dev.gpucoll.examples.moe.MoeAllToAll ;;
  linalg) main=dev.gpucoll.examples.linalg.SummaPowerIteration ;;
  lu) main=dev.gpucoll.examples.linalg.DistributedLu ;;
  cholesky) main=dev.gpucoll.examples.linalg.DistributedCholesky ;;
  linalg-bench) main=dev.gpucoll.examples.linalg.FactorizationBenchmark ;;
  solve) main=dev.gpucoll.examples.linalg.SolveSystem ;;
  *) echo "usage: scripts/example.sh training|moe|linalg|lu|cholesky|linalg-bench|solve [--ranks N] [--master M] [options]" >&2; exit 2 ;;
esac
shift

need() { command -v "$1" >/dev/null 2>&1; }
if ! need java || ! need mvn; then
  echo "example.sh needs Java 17+ and Maven 3.8+ (e.g. apt-get install openjdk-17-jdk-headless maven)" >&2
  exit 1
fi
if ! need nvcc && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

source scripts/build-examples.sh
echo "Running $main..."
mvn -B -q -ntp -pl examples exec:exec -Dexample.main="$main" -Dexample.args="$*"
