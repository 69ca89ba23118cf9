#!/usr/bin/env bash
# Groups across simulated hosts (netns.sh, isolated: the bridge in a namespace of its own, nothing
# added to the caller's network namespace), one rank per host, in one run: the host backend over
# UCX (host-ucx) and Open MPI over TCP (btl tcp,self, pml ob1; mpirun in the launcher namespace)
# between the same namespaces, allReduce, allGather and allToAll from 8 B to 16 MiB; RELAY=1 adds
# the relay (host-relay, data through FileRendezvous files). Prints the tables and writes
# docs/bench/host-multihost-<host counts>h-<date>-<commit>.json (rows: hosts, ranks per host,
# collective, bytes, ours and Open MPI's p50/p99). SIZES=8,1024, ITERS=300 (timed calls per size
# at most) and WARMUP=500 (untimed calls first) shorten a run, e.g. at 3 hosts on a 2-core machine, where every call waits for a core.
# After the untimed calls the Java ranks run each size untimed, before its timed calls, until 5120 calls
# (or 3 s) have run and no JIT compiler thread ran for 100 ms (HostCollectivesBenchmark): a JIT compile
# during the timed calls takes a spinning rank's core for a scheduler tick (4 ms).
# Needs root, iproute2, libucx0, openmpi-bin + libopenmpi-dev (mpicc), gpucoll-core compiled
# (mvn -B -pl spark-plugin/gpucoll-core -am compile; JUCX in ~/.m2, which that fetches):
#   scripts/multihost/bench.sh ["2 3"] [rounds=2]
# Each round runs the sides one after the other for every host count; the ratios use each side's
# best median over the rounds (a loaded machine slows whichever side it hits), with that round's p99.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
# Names of its own: a run.sh (gcmh-*) may run at the same time.
export MH_PREFIX=gcmb-h MH_SWITCH=gcmb-sw
source scripts/multihost/netns.sh
host_counts="${1:-2 3}"
rounds="${2:-2}"
sizes=${SIZES:-8,64,512,4096,32768,262144,1048576,4194304,16777216}
iters=${ITERS:-2000}
max_hosts=$(echo "$host_counts" | tr ' ' '\n' | sort -n | tail -1)
work=$(mktemp -d /tmp/gpucoll-mhbench.XXXXXX)
trap 'mh_cleanup; rm -rf "$work"' EXIT INT TERM
# The benchmark needs only the core (and JUCX): the host backend, without Spark or CUDA.
jucx_version=$(sed -n 's:.*<jucx.version>\(.*\)</jucx.version>.*:\1:p' pom.xml)
jucx="${HOME}/.m2/repository/org/openucx/jucx/$jucx_version/jucx-$jucx_version.jar"
[ -f "$jucx" ] || { echo "missing $jucx: run mvn -B -pl spark-plugin/gpucoll-core -am compile first" >&2; exit 2; }
# A copy: a build during the run must not change the classes under the ranks.
mkdir -p "$work/classes/bench"
cp -r spark-plugin/gpucoll-core/target/classes "$work/classes/core"
cp -r spark-plugin/gpucoll-api/target/classes "$work/classes/api"
cp="$work/classes/bench:$work/classes/core:$work/classes/api:$jucx"
javac -d "$work/classes/bench" -cp "$cp" examples/src/main/java/dev/gpucoll/examples/bench/HostCollectivesBenchmark.java
mpicc -O2 -o "$work/collectives_bench" scripts/mpi-anchor/collectives_bench.c
commit=$(git rev-parse --short HEAD)
day=$(date -u +%Y-%m-%d)
out="docs/bench/host-multihost-$(echo "$host_counts" | tr ' ' '-')h-$day-$commit.json"
mh_setup_isolated "$max_hosts"
export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0   # the same transport as the MPI anchor
# As conf/spark-defaults.conf.template sets for executors: UCX warns that JUCX asks for a newer UCP
# API than the system's 1.13.1 serves, which is harmless (README, "UCX's version warning").
export UCX_LOG_LEVEL=error
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
  # The supported setup prints nothing of UCX's on stderr (README: "UCX's version warning").
  if grep -h "UCX  WARN" "$work/$name-r"*.log | head -3 | grep .; then echo "$name: UCX warned (above)" >&2; fi
}

mpi_run() { # <name> <hosts>: mpirun in the launcher namespace (host 0), one rank per host
  local name=$1 n=$2 hosts="" r
  for r in $(seq 1 "$n"); do hosts="$hosts${hosts:+,}$(mh_ip "$r"):1"; done
  ip netns exec "${MH_PREFIX}0" mpirun --allow-run-as-root -np "$n" --host "$hosts" --bind-to none \
    --mca plm_rsh_agent "$root/scripts/multihost/ns-agent.sh" --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include 198.18.0.0/24 --mca oob_tcp_if_include 198.18.0.0/24 \
    "$work/collectives_bench" "$sizes" "$iters" > "$work/$name.txt" 2> "$work/$name.err" &
  # In the background, so a TERM to this script ends it (and its namespaces) at once.
  wait $! || { cat "$work/$name.err" >&2; return 1; }
}

echo "## machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## date $(date -u +%FT%TZ) commit $commit; $(java -version 2>&1 | sed -n 1p); $(mpirun --version | sed -n 1p); UCX $(dpkg-query -W -f='${Version}' libucx0 2>/dev/null)"
runs=""
for round in $(seq 1 "$rounds"); do
  for n in $host_counts; do
    java_run "ucx-$n-$round" "$n" host.crossHost=ucx --warmUp=${WARMUP:-2000} --maxIters=$iters --sizes=$sizes \
      --collectives=allReduce,allGather,allToAll
    mpi_run "mpi-$n-$round" "$n"
    sides="ucx mpi"
    if [ "${RELAY:-0}" = 1 ]; then
      java_run "relay-$n-$round" "$n" host.crossHost=relay --warmUp=20 --maxIters=20 --sizes=8,4096,1048576,16777216
      sides="$sides relay"
    fi
    for r in $sides; do
      runs="$runs $r-$n-$round"
      echo; echo "### round $round, $r, $n hosts (load $(cut -d' ' -f1-3 /proc/loadavg))"; cat "$work/$r-$n-$round.txt"
    done
  done
done

python3 - "$work" "$out" "$commit" "$day" $runs <<'PY'
import json, sys, os
work, out, commit, day, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rec = {"kind": "host-multihost", "date": day, "commit": commit,
       "machine": {"nproc": os.cpu_count(), "load": open("/proc/loadavg").read().split()[:3]},
       "method": "one rank per simulated host (network+UTS+mount+IPC namespaces, veth + a bridge in its own "
                 "namespace), float32, median and p99 of timed calls on rank 0; UCX_TLS=tcp,self; Open MPI pml ob1 "
                 "btl tcp,self; rows: each side's best median over the rounds with that round's p99",
       "runs": {}}
for name in runs:
    rows = []
    for line in open(os.path.join(work, name + ".txt")):
        f = line.split()
        if len(f) >= 7 and f[0] in ("allReduce", "allGather", "allToAll"):
            rows.append({"collective": f[0], "bytes": int(f[1]), "iters": int(f[2]), "median_us": float(f[3]),
                         "p99_us": float(f[4]), "gbps": float(f[5]), "algorithm": f[6]})
    rec["runs"][name] = rows
def best(side, n, coll, b):
    pick = None
    for name, rows in rec["runs"].items():
        if name.startswith(f"{side}-{n}-"):
            for r in rows:
                if r["collective"] == coll and r["bytes"] == b and (pick is None or r["median_us"] < pick["median_us"]):
                    pick = r
    return pick
rows = []
for n in sorted({r.split("-")[1] for r in runs}, key=int):
    keys = []
    for r in rec["runs"].get(f"ucx-{n}-1", []):
        keys.append((r["collective"], r["bytes"]))
    for coll, b in keys:
        u, m = best("ucx", n, coll, b), best("mpi", n, coll, b)
        row = {"hosts": int(n), "ranks_per_host": 1, "collective": coll, "bytes": b,
               "ours_p50_us": u and u["median_us"], "ours_p99_us": u and u["p99_us"],
               "mpi_p50_us": m and m["median_us"], "mpi_p99_us": m and m["p99_us"],
               "ours_over_mpi": round(u["median_us"] / m["median_us"], 2) if u and m else None,
               "ours_p99_over_p50": round(u["p99_us"] / u["median_us"], 1) if u else None,
               "algorithm": u and u["algorithm"]}
        rl = best("relay", n, coll, b)
        if rl:
            row["relay_p50_us"] = rl["median_us"]
        rows.append(row)
rec["rows"] = rows
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(rec, open(out, "w"), indent=1)
print("\n## best median over the rounds (us); ours/mpi (target <= 1.5); ours p99/p50 (target <= 5 up to 1 KB)")
print(f"{'hosts':>5} {'collective':10} {'bytes':>9} {'ours p50':>10} {'p99':>10} {'mpi p50':>10} {'p99':>10} {'ours/mpi':>9} {'p99/p50':>8}")
for r in rows:
    print(" ".join(f"{str(r[k]):>{w}}" for k, w in (("hosts", 5), ("collective", 10), ("bytes", 9), ("ours_p50_us", 10),
          ("ours_p99_us", 10), ("mpi_p50_us", 10), ("mpi_p99_us", 10), ("ours_over_mpi", 9), ("ours_p99_over_p50", 8))))
print("wrote", out)
PY
