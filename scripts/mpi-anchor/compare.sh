#!/usr/bin/env bash
# Host backend vs Open MPI on this machine, in one run: prints the machine, then the Open MPI
# anchor and HostCollectivesBenchmark tables, twice, alternating (a loaded machine shifts both).
# Prerequisite: the project is installed (mvn -B install -DskipTests) so examples can be packaged.
#   scripts/mpi-anchor/compare.sh [rounds=2]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
rounds="${1:-2}"
mvn -B -q -pl examples package -DskipTests
cpfile="$(mktemp)"
mvn -B -q -pl examples dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$cpfile"
cp="examples/target/classes:$(cat "$cpfile")"
rm -f "$cpfile"
echo "## machine"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit: $(git rev-parse --short HEAD)  nproc: $(nproc)"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L2|L3|Hypervisor)' || true
java -version 2>&1 | sed -n 1p
for i in $(seq 1 "$rounds"); do
  echo
  echo "## round $i: Open MPI   (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  "$root/scripts/mpi-anchor/run.sh" 2
  echo
  echo "## round $i: gpucoll host backend   (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  java -cp "$cp" dev.gpucoll.examples.bench.HostCollectivesBenchmark 2
done
