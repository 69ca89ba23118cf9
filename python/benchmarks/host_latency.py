"""Per-call latency of a CPU allReduce from a PySpark barrier task, beside the same call from Java
and beside gloo (torch.distributed, as TorchDistributor's tasks run it), all three in the same
Spark application on the same executors, in alternating rounds; then a whole job against
TorchDistributor's. Prints a table and writes its JSON record under docs/records/bench/.

    python3 python/benchmarks/host_latency.py [--ranks 2] [--rounds 3] [--out docs/records/bench/...json]

Needs the one jar and the examples jar (mvn -B -ntp package -DskipTests), PySpark, and torch for the
gloo columns (they say "no torch" without it).
"""

import argparse
import datetime
import glob
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))  # this tree's package, on the driver and (below) the executors
SIZES = [8, 64, 1024, 65536, 1048576]


def iters(nbytes):
    return 3000 if nbytes <= 1024 else 1000 if nbytes <= 65536 else 200


def warmup(nbytes):
    """Untimed calls first: enough for the JIT to compile the executor's side of the call (C2 after
    about 10^4 invocations), on both sides alike."""
    return 10000 if nbytes <= 1024 else 2000 if nbytes <= 65536 else 200


def jar(pattern):
    found = [j for j in glob.glob(os.path.join(ROOT, pattern)) if not j.endswith(("-sources.jar", "-javadoc.jar"))]
    if not found:
        sys.exit("no %s: build it first (mvn -B -ntp package -DskipTests)" % pattern)
    return found[0]


def summary(ns):
    ns = np.sort(np.asarray(ns, dtype=np.int64))
    return {"median_us": float(ns[len(ns) // 2]) / 1e3, "p99_us": float(ns[min(len(ns) - 1, int(len(ns) * 0.99))]) / 1e3}


def timed(make, call):
    """{bytes: summary} of ``call`` on a float32 vector of each size, each call timed alone after a warm-up."""
    out = {}
    for nbytes in SIZES:
        x = make(max(1, nbytes // 4))
        for _ in range(warmup(nbytes)):
            call(x)
        ns = []
        for _ in range(iters(nbytes)):
            t0 = time.perf_counter_ns()
            call(x)
            ns.append(time.perf_counter_ns() - t0)
        out[str(nbytes)] = summary(ns)
    return out


def python_task(_):
    import gpucoll
    comm = gpucoll.communicator()
    out = timed(lambda n: np.ones(n, np.float32), comm.all_reduce)
    yield json.dumps(out) if comm.rank == 0 else ""


def _gloo(ctx):
    """torch.distributed on gloo in this barrier task, rendezvous as TorchDistributor does."""
    import torch.distributed as dist
    rank = ctx.partitionId()
    infos = ctx.getTaskInfos()
    port = ""
    if rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = str(s.getsockname()[1])
    port = ctx.allGather(port)[0]
    os.environ.update(MASTER_ADDR=infos[0].address.split(":")[0], MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=len(infos))
    return dist


def gloo_task(_):
    import torch
    from pyspark import BarrierTaskContext
    dist = _gloo(BarrierTaskContext.get())
    out = timed(lambda n: torch.ones(n, dtype=torch.float32), dist.all_reduce)
    rank = dist.get_rank()
    dist.destroy_process_group()
    yield json.dumps(out) if rank == 0 else ""


def whole_job_gpucoll(sc, ranks, calls):
    def task(_):
        import gpucoll
        comm = gpucoll.communicator()
        x = np.ones(256, np.float32)
        for _ in range(calls):
            comm.all_reduce(x)
        yield float(x[0])
    t0 = time.monotonic()
    sc.parallelize(range(ranks), ranks).barrier().mapPartitions(task).collect()
    return time.monotonic() - t0


def whole_job_torch_distributor(ranks, calls):
    from pyspark.ml.torch.distributor import TorchDistributor

    def train():
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        x = torch.ones(256)
        for _ in range(calls):
            dist.all_reduce(x)
        dist.destroy_process_group()
    t0 = time.monotonic()
    TorchDistributor(num_processes=ranks, local_mode=False, use_gpu=False).run(train)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False

    from pyspark.sql import SparkSession
    dist_jar = jar("spark-plugin/gpucoll-dist/target/gpucoll-dist_2.13-*.jar")
    examples_jar = jar("examples/target/gpucoll-examples_2.13-*.jar")
    spark = (SparkSession.builder.master("local-cluster[%d,1,1024]" % args.ranks).appName("gpucoll-python-latency")
             .config("spark.jars", dist_jar + "," + examples_jar)
             .config("spark.plugins", "dev.gpucoll.spark.GpuCollectivesPlugin")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    jvm = sc._jvm
    n = args.ranks
    rounds = {"python": [], "java": [], "gloo": []}
    for r in range(args.rounds):
        got = [s for s in sc.parallelize(range(n), n).barrier().mapPartitions(python_task).collect() if s]
        rounds["python"].append(json.loads(got[0]))
        per = {}
        for b in SIZES:  # one size at a time: the Java side times iters(b) calls, as Python does
            one = sc._gateway.new_array(jvm.long, 1)
            one[0] = b
            per.update(json.loads(jvm.dev.gpucoll.examples.bench.BarrierLatency.allReduce(
                sc._jsc, n, one, warmup(b), iters(b))))
        rounds["java"].append(per)
        if have_torch:
            got = [s for s in sc.parallelize(range(n), n).barrier().mapPartitions(gloo_task).collect() if s]
            rounds["gloo"].append(json.loads(got[0]))
        print("round %d of %d done" % (r + 1, args.rounds), flush=True)

    def med(side, size, key):
        vals = [rd[str(size)][key] for rd in rounds[side]]
        return statistics.median(vals) if vals else None

    rows = []
    print("\nallReduce float32 sum, %d ranks, per call on rank 0 (median of %d rounds' medians; p99 likewise)" % (
        n, args.rounds))
    print("%10s | %18s | %18s | %18s | %8s | %8s" % ("bytes", "python med/p99 us", "java med/p99 us",
                                                    "gloo med/p99 us", "py/java", "py/gloo"))
    for b in SIZES:
        py, pyp = med("python", b, "median_us"), med("python", b, "p99_us")
        jv, jvp = med("java", b, "median_us"), med("java", b, "p99_us")
        gl, glp = med("gloo", b, "median_us"), med("gloo", b, "p99_us")
        row = {"bytes": b, "python_median_us": py, "python_p99_us": pyp, "java_median_us": jv, "java_p99_us": jvp,
               "gloo_median_us": gl, "gloo_p99_us": glp, "python_over_java": py / jv,
               "python_over_gloo": py / gl if gl else None,
               "rounds": {side: [rd[str(b)] for rd in rounds[side]] for side in rounds}}
        rows.append(row)
        print("%10d | %8.2f / %7.2f | %8.2f / %7.2f | %18s | %7.2fx | %8s" % (
            b, py, pyp, jv, jvp, "%8.2f / %7.2f" % (gl, glp) if gl else "no torch", py / jv,
            "%.3fx" % (py / gl) if gl else "-"))

    jobs = {}
    calls = 1000
    jobs["gpucoll_barrier_job_s"] = [whole_job_gpucoll(sc, n, calls) for _ in range(args.rounds)]
    if have_torch:
        jobs["torch_distributor_s"] = [whole_job_torch_distributor(n, calls) for _ in range(args.rounds)]
    print("\nwhole job, %d ranks, %d allReduce calls of 1 KiB each: gpucoll barrier job %s s%s" % (
        n, calls, ", ".join("%.2f" % t for t in jobs["gpucoll_barrier_job_s"]),
        "; TorchDistributor (gloo) " + ", ".join("%.2f" % t for t in jobs["torch_distributor_s"]) + " s"
        if have_torch else " (no torch: no TorchDistributor run)"))
    spark.stop()

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    import pyspark
    record = {
        "benchmark": "python-host-latency", "date": datetime.date.today().isoformat(),
        "commit": commit + ("+uncommitted" if dirty else ""),
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg(), "platform": platform.platform()},
        "versions": {"python": platform.python_version(), "pyspark": pyspark.__version__,
                     "numpy": np.__version__, "torch": __import__("torch").__version__ if have_torch else None},
        "ranks": n, "rounds": args.rounds, "warmup_calls": {str(b): warmup(b) for b in SIZES}, "sizes": rows, "whole_job": jobs,
    }
    out = args.out or os.path.join(ROOT, "docs", "bench", "python-host-latency-%dr-%s-%s.json" % (n, record["date"], commit))
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print("record: %s" % os.path.relpath(out, ROOT))


if __name__ == "__main__":
    main()
