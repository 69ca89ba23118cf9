#!/usr/bin/env bash
# Groups across simulated hosts (netns.sh), one rank per host, in one run: the host backend over
# UCX (host-ucx), the same over the relay (host-relay, data through the rendezvous: here
# FileRendezvous files, in Spark the driver), and Open MPI over TCP (btl tcp,self, pml ob1) between
# the same namespaces. Prints the tables and writes docs/bench/host-multihost-<date>-<commit>.json.
# Needs root, iproute2, libucx0, openmpi-bin + libopenmpi-dev (mpicc), and the examples built:
#   mvn -B -pl examples -am package -DskipTests -Dnvcc=none   (and JUCX in ~/.m2, which that fetches)
#   scripts/multihost/bench.sh ["2 3"] [rounds=2]
# Each round runs the three sides one after the other for every host count; the ratios use each
# side's best median over the rounds (a loaded machine slows whichever side it hits).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
source scripts/multihost/netns.sh
host_counts="${1:-2 3}"
rounds="${2:-2}"
max_hosts=$(echo "$host_counts" | tr ' ' '\n' | sort -n | tail -1)
work=$(mktemp -d /tmp/gpucoll-mhbench.XXXXXX)
trap 'mh_cleanup; rm -rf "$work"' EXIT INT TERM
# The benchmark needs only the core (and JUCX): the host backend, without Spark or CUDA.
jucx_version=$(sed -n 's:.*<jucx.version>\(.*\)</jucx.version>.*:\1:p' pom.xml)
jucx="${HOME}/.m2/repository/org/openucx/jucx/$jucx_version/jucx-$jucx_version.jar"
# A copy: a build during the run must not change the classes under the ranks.
mkdir -p "$work/classes"
cp -r examples/target/classes "$work/classes/examples"
cp -r spark-plugin/gpucoll-core/target/classes "$work/classes/core"
cp -r spark-plugin/gpucoll-api/target/classes "$work/classes/api"
cp="$work/classes/examples:$work/classes/core:$work/classes/api:$jucx"
mpicc -O2 -o "$work/collectives_bench" scripts/mpi-anchor/collectives_bench.c
commit=$(git rev-parse --short HEAD)
day=$(date -u +%Y-%m-%d)
out="docs/bench/host-multihost-$day-$commit.json"
mh_setup "$max_hosts"
export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0   # the same transport as the MPI anchor
main=dev.gpucoll.examples.bench.HostCollectivesBenchmark

java_run() { # <name> <hosts> <args...>: one rank per host; rank 0's table goes to $work/<name>.txt
  local name=$1 n=$2
  shift 2
  local dir="$work/rv-$name"
  mkdir -p "$dir"
  local first=${#MH_HOST_PIDS[@]} r
  for r in $(seq 0 $((n - 1))); do
    on_host $((r + 1)) "$work/$name-r$r.log" java -Xmx3g -XX:+UseParallelGC -cp "$cp" "$main" --rank "$dir" "$r" "$n" \
      "--host=gcmh-host$((r + 1))" "$@"
  done
  for p in "${MH_HOST_PIDS[@]:$first}"; do wait "$p" || { echo "$name: a rank failed" >&2; for f in "$work/$name-r"*.log; do tail -n 20 "$f" >&2; done; return 1; }; done
  grep -v '^\[' "$work/$name-r0.log" > "$work/$name.txt"
}

mpi_run() { # <name> <hosts>
  local name=$1 n=$2 hosts="" r
  for r in $(seq 1 "$n"); do hosts="$hosts${hosts:+,}$(mh_ip "$r"):1"; done
  mpirun --allow-run-as-root -np "$n" --host "$hosts" --bind-to none \
    --mca plm_rsh_agent "$root/scripts/multihost/ns-agent.sh" --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include 198.18.0.0/24 --mca oob_tcp_if_include 198.18.0.0/24 \
    "$work/collectives_bench" > "$work/$name.txt" 2> "$work/$name.err" || { cat "$work/$name.err" >&2; return 1; }
}

echo "## machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## date $(date -u +%FT%TZ) commit $commit; $(java -version 2>&1 | sed -n 1p); $(mpirun --version | sed -n 1p); UCX $(dpkg-query -W -f='${Version}' libucx0 2>/dev/null)"
runs=""
for round in $(seq 1 "$rounds"); do
  for n in $host_counts; do
    java_run "ucx-$n-$round" "$n" host.crossHost=ucx --warmUp=2000 --maxIters=2000
    mpi_run "mpi-$n-$round" "$n"
    java_run "relay-$n-$round" "$n" host.crossHost=relay --warmUp=20 --maxIters=20 --sizes=8,4096,1048576,16777216
    runs="$runs ucx-$n-$round mpi-$n-$round relay-$n-$round"
    for r in ucx mpi relay; do
      echo; echo "### round $round, $r, $n hosts (load $(cut -d' ' -f1-3 /proc/loadavg))"; cat "$work/$r-$n-$round.txt"
    done
  done
done

python3 - "$work" "$out" "$commit" "$day" $runs <<'PY'
import json, sys, os, subprocess
work, out, commit, day, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rec = {"kind": "host-multihost", "date": day, "commit": commit,
       "machine": {"nproc": os.cpu_count(), "load": open("/proc/loadavg").read().split()[:3]},
       "method": "one rank per simulated host (network+UTS+mount+IPC namespaces, veth + bridge), float32, "
                 "median of timed calls on rank 0; UCX_TLS=tcp,self; Open MPI pml ob1 btl tcp,self",
       "runs": {}}
for name in runs:
    rows = []
    for line in open(os.path.join(work, name + ".txt")):
        f = line.split()
        if len(f) >= 7 and f[0] in ("allReduce", "allToAll"):
            rows.append({"collective": f[0], "bytes": int(f[1]), "iters": int(f[2]), "median_us": float(f[3]),
                         "p99_us": float(f[4]), "gbps": float(f[5]), "algorithm": f[6]})
    rec["runs"][name] = rows
def med(side, n, coll, b):
    best = None
    for name, rows in rec["runs"].items():
        if name.startswith(f"{side}-{n}-"):
            for r in rows:
                if r["collective"] == coll and r["bytes"] == b and (best is None or r["median_us"] < best):
                    best = r["median_us"]
    return best
ratios = {}
for n in sorted({r.split("-")[1] for r in runs}):
    for coll in ("allReduce", "allToAll"):
        for b in (8, 4096, 1048576, 16777216):
            u, m, rl = med("ucx", n, coll, b), med("mpi", n, coll, b), med("relay", n, coll, b)
            k = f"{coll} {b} B, {n} hosts"
            ratios[k] = {"ucx_us": u, "mpi_us": m, "relay_us": rl,
                         "relay_over_ucx": round(rl / u, 2) if u and rl else None,
                         "ucx_over_mpi": round(u / m, 2) if u and m else None}
rec["ratios"] = ratios
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(rec, open(out, "w"), indent=1)
print("\n## best median over the rounds (us): relay/ucx, ucx/mpi")
for k, v in ratios.items():
    print(f"{k:34s} ucx {v['ucx_us']}  mpi {v['mpi_us']}  relay {v['relay_us']}  relay/ucx {v['relay_over_ucx']}  ucx/mpi {v['ucx_over_mpi']}")
print("wrote", out)
PY
