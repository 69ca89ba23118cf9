#!/usr/bin/env bash
# Inside one host, 2 ranks bound to cores 0 and 1: the host backend's small calls (shared memory)
# against Open MPI's (vader), alternating in every round (odd rounds Open MPI first), each round's
# median, p99 and p99 / median per size. For the tails target (p99 <= 3x the median at 8 B): a
# p99 is 1 % of the calls, so a round runs ITERS (20000) timed calls per size. Needs only
# gpucoll-core compiled (mvn -B -pl spark-plugin/gpucoll-core -am compile) and mpicc/mpirun
# (scripts/mpi-anchor/run.sh installs them); no installed project.
#   SIZES=8,64 COLLECTIVES=allReduce,allToAll scripts/mpi-anchor/tails.sh [rounds=3]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
rounds="${1:-3}"
sizes=${SIZES:-8,64}
collectives=${COLLECTIVES:-allReduce,allToAll}
work=$(mktemp -d /tmp/gpucoll-tails.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
# A copy: a build during the run must not change the classes under the ranks.
mkdir -p "$work/bench"
cp -r spark-plugin/gpucoll-core/target/classes "$work/core"
cp -r spark-plugin/gpucoll-api/target/classes "$work/api"
cp="$work/bench:$work/core:$work/api"
javac -d "$work/bench" -cp "$cp" examples/src/main/java/dev/gpucoll/examples/bench/HostCollectivesBenchmark.java
mpicc -O2 -o "$work/collectives_bench" scripts/mpi-anchor/collectives_bench.c
case $sizes in *,*) mpi_sizes=$sizes ;; *) mpi_sizes="$sizes,$sizes" ;; esac # one size alone would be a maximum there
echo "## machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ)"
side() { # <mpi|ucx>
  echo "### $1 (1-minute load $(cut -d' ' -f1 /proc/loadavg) before)"
  case $1 in
    mpi) mpirun --allow-run-as-root -np 2 --bind-to core --mca btl self,vader --mca pml ob1 \
      "$work/collectives_bench" "$mpi_sizes" | awk -v c="$collectives" 'BEGIN{n=split(c,a,",");for(i=1;i<=n;i++)k[a[i]]=1}
        NR==1 || $1=="collective" || ($1 in k) || ($1 ~ /^MPI_/) {print}' ;;
    java) java -cp "$cp" dev.gpucoll.examples.bench.HostCollectivesBenchmark 2 "--sizes=$sizes" \
      "--collectives=$collectives" ;;
  esac
}
for r in $(seq 1 "$rounds"); do
  echo "## round $r"
  if [ $((r % 2)) -eq 1 ]; then side mpi; side java; else side java; side mpi; fi
done
