#!/usr/bin/env bash
# Groups across simulated hosts (netns.sh, isolated: the bridge in a namespace of its own, nothing
# added to the caller's network namespace), one rank per host, in one run: the host backend over
# UCX (host-ucx) and Open MPI over TCP (btl tcp,self, pml ob1; mpirun in the launcher namespace)
# between the same namespaces, allReduce, allGather and allToAll from 8 B to 16 MiB; RELAY=1 adds
# the relay (host-relay, data through FileRendezvous files). Prints the tables and writes
# docs/records/bench/host-multihost-<host counts>h-<date>-<commit>.json (every round's rows of both sides,
# and the verdict rows). SIZES=8,1024, ITERS=300 (timed calls per size at most) and WARMUP=500
# (untimed calls first) shorten a run, e.g. at 3 hosts on a 2-core machine, where every call waits for a core.
# After the untimed calls the Java ranks run each size untimed, before its timed calls, until 5120 calls
# (or 3 s) have run and no JIT compiler thread ran for 100 ms (HostCollectivesBenchmark): a JIT compile
# during the timed calls takes a spinning rank's core for a scheduler tick (4 ms). A timed loop in
# which the JIT or a GC still ran on a rank is rerun, twice at most, and marked when it still was.
# Needs root, iproute2, libucx0, openmpi-bin + libopenmpi-dev (mpicc), gpucoll-core compiled
# (mvn -B -pl spark-plugin/gpucoll-core -am compile; JUCX in ~/.m2, which that fetches):
#   scripts/multihost/bench.sh ["2 3"] [rounds=3]
# Rounds alternate the sides (odd rounds host-ucx first, even rounds Open MPI first), so a load that
# drifts during the run falls on both. The verdict per size is each side's median over the rounds
# (not its best: a lucky draw of either side decides nothing), the ratio of those medians, with
# every round's ratio and the spread of each side's medians beside it.
# BUILDS="r3cb81a1=/path/to/checkout twoshot=.+algorithm=host-twoshot ..." adds, in every round, a
# host-ucx side per label: the named checkout's gpucoll-core and gpucoll-api classes (compiled there;
# the same benchmark program), with the settings after each '+' (spark.gpucoll settings without the
# prefix; UCX_* ones go to the ranks' environment), between this checkout's side and
# Open MPI's, so builds of two commits or two settings are compared in one run; the verdict rows then
# carry each build's median over the rounds and its ratio to Open MPI.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
# Names of its own: a run.sh (gcmh-*) may run at the same time (MH_PREFIX, MH_SWITCH: another bench.sh too).
export MH_PREFIX=${MH_PREFIX:-gcmb-h} MH_SWITCH=${MH_SWITCH:-gcmb-sw}
source scripts/multihost/netns.sh
host_counts="${1:-2 3}"
rounds="${2:-3}"
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
declare -A build_cp=() build_settings=() build_env=()
build_labels=""
for build in ${BUILDS:-}; do
  label=${build%%=*} checkout=${build#*=}
  build_settings[$label]=""
  build_env[$label]=""
  case $checkout in *+*)
    for setting in $(echo "${checkout#*+}" | tr '+' ' '); do
      case $setting in UCX_*) build_env[$label]="${build_env[$label]} $setting" ;; *) build_settings[$label]="${build_settings[$label]} $setting" ;; esac
    done
    checkout=${checkout%%+*} ;;
  esac
  case $label in *[!A-Za-z0-9]*|"") echo "BUILDS: a label is letters and digits ($label)" >&2; exit 2 ;; esac
  mkdir -p "$work/classes/$label/bench"
  cp -r "$checkout/spark-plugin/gpucoll-core/target/classes" "$work/classes/$label/core"
  cp -r "$checkout/spark-plugin/gpucoll-api/target/classes" "$work/classes/$label/api"
  build_cp[$label]="$work/classes/$label/bench:$work/classes/$label/core:$work/classes/$label/api:$jucx"
  javac -d "$work/classes/$label/bench" -cp "${build_cp[$label]}" examples/src/main/java/dev/gpucoll/examples/bench/HostCollectivesBenchmark.java
  build_labels="$build_labels b$label"
done
mpicc -O2 -o "$work/collectives_bench" scripts/mpi-anchor/collectives_bench.c
commit=$(git rev-parse --short HEAD)
day=$(date -u +%Y-%m-%d)
out="docs/records/bench/host-multihost-$(echo "$host_counts" | tr ' ' '-')h-$day-$commit.json"
mh_setup_isolated "$max_hosts"
export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0   # the same transport as the MPI anchor
# As conf/spark-defaults.conf.template sets for executors: UCX warns that JUCX asks for a newer UCP
# API than the system's 1.13.1 serves, which is harmless (README, "UCX's version warning").
export UCX_LOG_LEVEL=error
main=dev.gpucoll.examples.bench.HostCollectivesBenchmark

java_run() { # <name> <hosts> <class path> <VAR=value ...|-> <args...>: one rank per host; rank 0's table goes to $work/<name>.txt
  local name=$1 n=$2 cp=$3 envs=${4#-}
  shift 4
  local dir="$work/rv-$name"
  mkdir -p "$dir"
  local first=${#MH_HOST_PIDS[@]} r
  for r in $(seq 0 $((n - 1))); do
    on_host $((r + 1)) "$work/$name-r$r.log" env $envs java -Xmx3g -XX:+UseParallelGC -cp "$cp" "$main" --rank "$dir" "$r" "$n" \
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
loads=""
ucx_args="--warmUp=${WARMUP:-2000} --maxIters=$iters --sizes=$sizes --collectives=allReduce,allGather,allToAll"
side_run() { # <side> <hosts> <round>
  case $1 in
    ucx) java_run "ucx-$2-$3" "$2" "$cp" - host.crossHost=ucx $ucx_args ;;
    mpi) mpi_run "mpi-$2-$3" "$2" ;;
    b*) java_run "$1-$2-$3" "$2" "${build_cp[${1#b}]}" "-${build_env[${1#b}]}" host.crossHost=ucx ${build_settings[${1#b}]} $ucx_args ;;
    relay) java_run "relay-$2-$3" "$2" "$cp" - host.crossHost=relay --warmUp=20 --maxIters=20 --sizes=8,4096,1048576,16777216 ;;
  esac
}
for round in $(seq 1 "$rounds"); do
  for n in $host_counts; do
    sides="ucx$build_labels mpi"
    [ $((round % 2)) = 1 ] || sides="mpi$build_labels ucx"
    [ "${RELAY:-0}" = 1 ] && sides="$sides relay"
    for r in $sides; do
      before=$(cut -d' ' -f1 /proc/loadavg)
      side_run "$r" "$n" "$round"
      after=$(cut -d' ' -f1 /proc/loadavg)
      runs="$runs $r-$n-$round"
      loads="$loads $before,$after"
      echo; echo "### round $round, $r, $n hosts (1-minute load $before before, $after after)"; cat "$work/$r-$n-$round.txt"
    done
  done
done

python3 - "$work" "$out" "$commit" "$day" "$runs" "$loads" <<'PY'
import json, sys, os, statistics
work, out, commit, day = sys.argv[1:5]
runs, loads = sys.argv[5].split(), sys.argv[6].split()
rec = {"kind": "host-multihost", "date": day, "commit": commit,
       "machine": {"nproc": os.cpu_count(), "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                                        if l.startswith("model name")), "?"),
                   "kernel": os.uname().release, "load_at_end": open("/proc/loadavg").read().split()[:3]},
       "method": "one rank per simulated host (network+UTS+mount+IPC namespaces, veth + a bridge in its own "
                 "namespace), float32, median, p99 and max of timed calls on rank 0; UCX_TLS=tcp,self; Open MPI pml ob1 "
                 "btl tcp,self; rounds alternate the sides; host-ucx timed loops in which the JIT (compiler threads' "
                 "CPU >= 1 ms or a compile ended) or a GC ran on any rank are rerun up to twice, else marked disturbed; "
                 "verdict rows: each side's median over the rounds of its medians and their ratio",
       "runs": {}}
if os.environ.get("BUILDS"):
    rec["builds"] = os.environ["BUILDS"]  # label=checkout[+setting...] of each b<label> side
for name, load in zip(runs, loads):
    rows = []
    for line in open(os.path.join(work, name + ".txt")):
        f = line.split()
        if len(f) >= 7 and f[0] in ("allReduce", "allGather", "allToAll"):
            row = {"collective": f[0], "bytes": int(f[1]), "iters": int(f[2]), "median_us": float(f[3]),
                   "p99_us": float(f[4]), "gbps": float(f[5]), "algorithm": f[6]}
            if len(f) >= 8:
                row["max_us"] = float(f[7])
            if len(f) >= 11:
                row.update({"jit_ms": float(f[8]), "gcs": int(float(f[9])), "reruns": int(f[10]),
                            "disturbed": len(f) > 11 and f[11] == "disturbed"})
            rows.append(row)
    rec["runs"][name] = {"load_1min_before_after": [float(x) for x in load.split(",")], "rows": rows}
def rounds_of(side, n, coll, b):
    got = []
    for name in runs:
        if name.startswith(f"{side}-{n}-"):
            got += [r for r in rec["runs"][name]["rows"] if r["collective"] == coll and r["bytes"] == b]
    return got
def spread(xs):
    return round((max(xs) - min(xs)) / statistics.median(xs), 2) if xs else None
rows = []
for n in sorted({r.split("-")[1] for r in runs}, key=int):
    keys = [(r["collective"], r["bytes"]) for r in rec["runs"].get(f"ucx-{n}-1", {"rows": []})["rows"]]
    for coll, b in keys:
        u, m = rounds_of("ucx", n, coll, b), rounds_of("mpi", n, coll, b)
        um, mm = [r["median_us"] for r in u], [r["median_us"] for r in m]
        row = {"hosts": int(n), "ranks_per_host": 1, "collective": coll, "bytes": b,
               "ours_p50_us": statistics.median(um), "ours_p99_us": statistics.median(r["p99_us"] for r in u),
               "ours_max_us": statistics.median(r.get("max_us", r["p99_us"]) for r in u),
               "mpi_p50_us": statistics.median(mm) if mm else None,
               "mpi_p99_us": statistics.median(r["p99_us"] for r in m) if m else None,
               "ours_rounds_p50_us": um, "mpi_rounds_p50_us": mm,
               "ours_spread": spread(um), "mpi_spread": spread(mm),
               "ratio_rounds": [round(a / c, 2) for a, c in zip(um, mm)],
               "ours_p99_over_p50": round(statistics.median(r["p99_us"] / r["median_us"] for r in u), 1),
               "disturbed_rounds": sum(1 for r in u if r.get("disturbed")),
               "algorithm": u[0]["algorithm"]}
        row["ours_over_mpi"] = round(row["ours_p50_us"] / row["mpi_p50_us"], 2) if mm else None
        for side in sorted({r.split("-")[0] for r in runs if r.startswith("b")}):
            bm = [r["median_us"] for r in rounds_of(side, n, coll, b)]
            row[f"build_{side[1:]}_p50_us"] = statistics.median(bm)
            row[f"build_{side[1:]}_rounds_p50_us"] = bm
            row[f"build_{side[1:]}_over_mpi"] = round(statistics.median(bm) / row["mpi_p50_us"], 2) if mm else None
        rl = rounds_of("relay", n, coll, b)
        if rl:
            row["relay_p50_us"] = statistics.median(r["median_us"] for r in rl)
        rows.append(row)
rec["rows"] = rows
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(rec, open(out, "w"), indent=1)
print("\n## median over the rounds (us); ours/mpi (target <= 1.5) with each round's; spread = (max - min) / median"
      " of a side's round medians; ours p99/p50 (target <= 5 up to 1 KB); dist = host-ucx rounds marked disturbed")
print(f"{'hosts':>5} {'collective':10} {'bytes':>9} {'ours p50':>10} {'mpi p50':>10} {'ours/mpi':>9} {'per round':>20}"
      f" {'spread':>12} {'p99/p50':>8} {'dist':>4}")
for r in rows:
    print(f"{r['hosts']:>5} {r['collective']:10} {r['bytes']:>9} {r['ours_p50_us']:>10.2f} {r['mpi_p50_us'] or 0:>10.2f}"
          f" {r['ours_over_mpi'] or 0:>9.2f} {' '.join(f'{x:.2f}' for x in r['ratio_rounds']):>20}"
          f" {str(r['ours_spread']) + '/' + str(r['mpi_spread']):>12} {r['ours_p99_over_p50']:>8} {r['disturbed_rounds']:>4}")
for side in sorted({r.split("-")[0] for r in runs if r.startswith("b")}):
    print(f"\n## build {side[1:]} (BUILDS): median over the rounds (us), over Open MPI's, and this checkout's over it")
    for r in rows:
        bp = r[f"build_{side[1:]}_p50_us"]
        print(f"{r['hosts']:>5} {r['collective']:10} {r['bytes']:>9} {bp:>10.2f} {r[f'build_{side[1:]}_over_mpi'] or 0:>9.2f}"
              f" {r['ours_p50_us'] / bp:>9.2f}  rounds {' '.join(f'{x:.2f}' for x in r[f'build_{side[1:]}_rounds_p50_us'])}")
print("wrote", out)
PY
