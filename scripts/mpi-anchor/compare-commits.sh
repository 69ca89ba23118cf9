#!/usr/bin/env bash
# The host backend benchmark of several builds beside the Open MPI anchor, in one run, alternating
# (a loaded machine shifts every number, so builds are compared only within one run). Each commit
# is exported (git archive) and built in a temporary folder (prebuilt kernel fatbin, nothing
# installed); "work" is this checkout as it is.
#   scripts/mpi-anchor/compare-commits.sh <ranks> <largest bytes> <rounds> <commit|work>...
# e.g. scripts/mpi-anchor/compare-commits.sh 3 65536 2 0963fab 25ee732 work
# With JSON=<file>, every row of every table also goes into that file (one JSON record). With
# CP_DIR=<dir>, a build whose <dir>/<commit>.fullcp exists runs from that class path unbuilt.
# COLLECTIVES=allReduce runs the host benchmark on allReduce only.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
ranks="$1"; max_bytes="$2"; rounds="$3"; shift 3
builds=("$@")
sizes=$(echo 8,64,512,1024,4096,32768,65536,262144,1048576,4194304,16777216,67108864 | tr ',' '\n' \
  | awk -v m="$max_bytes" '$1 <= m' | paste -sd, -)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
declare -A cp
for c in "$@"; do
  if [ -n "${CP_DIR:-}" ] && [ -f "$CP_DIR/$c.fullcp" ]; then # class paths of an earlier build
    cp[$c]="$(cat "$CP_DIR/$c.fullcp")"
    continue
  fi
  if [ "$c" = work ]; then
    src="$root"
  else
    src="$work/src-$c"
    mkdir -p "$src"
    git -C "$root" archive "$c" | tar -x -C "$src"
  fi
  echo "building $c in $src" >&2
  (cd "$src" && mvn -B -q -ntp -pl examples -am package -DskipTests -Dnvcc=none \
    dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$work/$c.cp" >&2)
  cp[$c]="$src/examples/target/classes:$(cat "$work/$c.cp")"
done
run_all() {
echo "## machine"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit: $(git -C "$root" rev-parse --short HEAD)  nproc: $(nproc)  ranks: $ranks"
lscpu | grep -E '^(Model name|CPU\(s\)|Hypervisor)' || true
java -version 2>&1 | sed -n 1p
for i in $(seq 1 "$rounds"); do
  echo
  echo "## round $i: Open MPI   (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  "$root/scripts/mpi-anchor/run.sh" "$ranks" "$max_bytes"
  for c in "${builds[@]}"; do
    echo
    echo "## round $i: gpucoll host backend, build $c   (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
    java -cp "${cp[$c]}" dev.gpucoll.examples.bench.HostCollectivesBenchmark "$ranks" "--sizes=$sizes" \
      "--collectives=${COLLECTIVES:-allReduce,allToAll}"
  done
done
}
log="$work/run.log"
run_all | tee "$log"

if [ -n "${JSON:-}" ]; then
  awk -v date="$(date -u +%Y-%m-%dT%H:%M:%SZ)" -v commit="$(git -C "$root" rev-parse --short HEAD)" \
      -v ranks="$ranks" -v nproc="$(nproc)" '
    BEGIN { printf "{\"kind\": \"host-vs-mpi\", \"date\": \"%s\", \"commit\": \"%s\", \"ranks\": %s, \"nproc\": %s, \"rows\": [", date, commit, ranks, nproc; n = 0 }
    /^## round / { round = $3 + 0; build = ($4 == "Open") ? "openmpi" : $8; sub(/ .*/, "", build)
                   load = $0; sub(/.*load average: /, "", load); sub(/\)$/, "", load) }
    /^(allReduce|allToAll) / { printf "%s\n  {\"round\": %d, \"build\": \"%s\", \"load\": \"%s\", \"collective\": \"%s\", \"bytes\": %s, \"iters\": %s, \"median_us\": %s, \"p99_us\": %s, \"algorithm\": \"%s\"}", (n++ ? "," : ""), round, build, load, $1, $2, $3, $4, $5, $7 }
    END { print "\n]}" }' "$log" > "$JSON"
  echo "wrote $JSON" >&2
fi
