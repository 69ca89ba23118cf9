#!/usr/bin/env bash
# Builds what the demo needs and runs it: a Spark local-cluster with 3 executor JVMs, one barrier
# job doing every collective on generated data (checked), the path report and a latency table.
# GPU backend when every executor has a usable GPU, host shared-memory backend otherwise.
# Usage: scripts/demo.sh [executors (3)] [timed repetitions (50)] [--ui: keep the Spark UI up, print its address]
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
if ! need java || ! need mvn; then
  if need apt-get && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless maven
  else
    echo "demo.sh needs Java 17+ and Maven 3.8+ (e.g. apt-get install openjdk-17-jdk-headless maven)" >&2
    exit 1
  fi
fi
if ! need nvcc && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

source scripts/build-examples.sh
echo "Running the demo: a Spark local-cluster of ${1:-3} executor JVMs, every collective checked, then the path report and latencies..."
mvn -B -q -ntp -pl examples exec:exec -Dexample.main=dev.gpucoll.examples.Demo -Dexample.args="$*"
